import BGTaskCore

#if canImport(Glibc)
import Glibc
#endif

/// One file in the XDG Desktop Entry format (Desktop Entry Specification 1.5), split into groups and
/// keys, values still raw (their type depends on the key).
///
/// Rules (each has a test in `DesktopEntryTests`):
/// - `#` lines and blank lines are comments; there are no trailing comments and no line continuation;
/// - `[Group]` headers (any printable ASCII but `[`, `]`); a group name may appear only once;
/// - `Key=Value`, whitespace around `=` ignored; keys are `A-Za-z0-9-`, optionally localized
///   `Key[lang_COUNTRY.ENCODING@MODIFIER]`; a key may appear only once per group (per locale);
/// - an entry before the first group is an error; a UTF-8 BOM is ignored; lines end with LF or CR LF.
public struct DesktopEntryFile: Sendable {
    /// One `Key[locale]=value` line.
    public struct Entry: Hashable, Sendable {
        public var key: String
        /// The part in brackets of a localized key (`de`, `sr@latin`), nil for the plain key.
        public var locale: String?
        /// The value as written, surrounding whitespace removed, escapes not yet decoded.
        public var raw: String
        public var line: Int
    }

    /// One `[Group]` and its entries in file order.
    public struct Group: Sendable {
        public var name: String
        public var line: Int
        public var entries: [Entry]

        /// The entry `key` (plain, or for exactly `locale`).
        public func entry(_ key: String, locale: String? = nil) -> Entry? {
            entries.first { $0.key == key && $0.locale == locale }
        }
    }

    public var path: String
    public var groups: [Group]

    /// The group named `name`.
    public func group(_ name: String) -> Group? { groups.first { $0.name == name } }

    /// Splits `text` into groups and entries; `errors` name `path`, the line and the key.
    public static func parse(_ text: String, path: String) -> (file: DesktopEntryFile, errors: [ConfigError]) {
        var file = DesktopEntryFile(path: path, groups: [])
        var errors: [ConfigError] = []
        // Split on scalars: Swift takes CR LF for one Character.
        var lines = text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).map { String(String.UnicodeScalarView($0)) }
        if let first = lines.first, first.hasPrefix("\u{FEFF}") { lines[0] = String(first.dropFirst()) }
        for (index, rawLine) in lines.enumerated() {
            let number = index + 1
            var line = Substring(rawLine)
            if line.last == "\r" { line = line.dropLast() }
            let location = SourceLocation(file: path, line: number)
            let trimmed = trimWhitespace(line)
            if trimmed.isEmpty || trimmed.first == "#" { continue }
            if trimmed.first == "[" {
                let inner = trimmed.dropFirst().dropLast()
                guard trimmed.count >= 2, trimmed.last == "]", !inner.isEmpty,
                      inner.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value < 0x7F && $0 != "[" && $0 != "]" })
                else {
                    errors.append(ConfigError(.invalidSectionHeader(String(trimmed)), at: location))
                    continue
                }
                let name = String(inner)
                if file.groups.contains(where: { $0.name == name }) {
                    errors.append(ConfigError(.invalid("group [\(name)] appears more than once"), at: location))
                }
                file.groups.append(Group(name: name, line: number, entries: []))
                continue
            }
            guard let equals = trimmed.firstIndex(of: "=") else {
                errors.append(ConfigError(.missingEquals(String(trimmed)), at: location))
                continue
            }
            let fullKey = trimWhitespace(trimmed[..<equals])
            let value = String(trimWhitespace(trimmed[trimmed.index(after: equals)...]))
            guard let (key, locale) = splitKey(fullKey) else {
                errors.append(ConfigError(
                    .invalid("invalid key name \(quoted(String(fullKey))): expected A-Za-z0-9- and an optional [locale]"),
                    at: location, key: String(fullKey)))
                continue
            }
            guard !file.groups.isEmpty else {
                errors.append(ConfigError(.invalid("entry before the first group header"), at: location, key: String(fullKey)))
                continue
            }
            let g = file.groups.count - 1
            if file.groups[g].entry(key, locale: locale) != nil {
                errors.append(ConfigError(
                    .invalid("key appears more than once in group [\(file.groups[g].name)]"), at: location, key: String(fullKey)))
                continue
            }
            file.groups[g].entries.append(Entry(key: key, locale: locale, raw: value, line: number))
        }
        return (file, errors)
    }

    /// `Name[de_DE@euro]` → ("Name", "de_DE@euro"); nil when the key is not well formed.
    static func splitKey(_ full: Substring) -> (String, String?)? {
        var key = full
        var locale: String?
        if let open = full.firstIndex(of: "[") {
            guard full.last == "]" else { return nil }
            let inner = full[full.index(after: open)..<full.index(before: full.endIndex)]
            guard !inner.isEmpty, inner.unicodeScalars.allSatisfy({ isKeyScalar($0) || "_.@".unicodeScalars.contains($0) })
            else { return nil }
            locale = String(inner)
            key = full[..<open]
        }
        guard !key.isEmpty, key.unicodeScalars.allSatisfy(isKeyScalar) else { return nil }
        return (String(key), locale)
    }

    private static func isKeyScalar(_ s: Unicode.Scalar) -> Bool {
        (s >= "A" && s <= "Z") || (s >= "a" && s <= "z") || (s >= "0" && s <= "9") || s == "-"
    }
}

/// Decoding of Desktop Entry values and of the `Exec=` command line.
public enum DesktopEntryValue: Sendable {
    /// A `string`/`localestring` value: `\s` space, `\n` newline, `\t` tab, `\r` return, `\\` backslash;
    /// any other escape (or a trailing backslash) is an error. `\;` is allowed only in lists.
    public static func string(_ raw: String) throws(ConfigError.Kind) -> String {
        try decode(raw, list: false).first ?? ""
    }

    /// A list value: elements separated by `;` (a trailing `;` is optional), `\;` a literal semicolon,
    /// each element decoded like a string. Empty elements are dropped.
    public static func list(_ raw: String) throws(ConfigError.Kind) -> [String] {
        try decode(raw, list: true).filter { !$0.isEmpty }
    }

    /// A `boolean`: `true` or `false` (and the deprecated `1`/`0`).
    public static func boolean(_ raw: String) throws(ConfigError.Kind) -> Bool {
        switch raw {
        case "true", "1": return true
        case "false", "0": return false
        default: throw .invalidBoolean(raw)
        }
    }

    private static func decode(_ raw: String, list: Bool) throws(ConfigError.Kind) -> [String] {
        var out: [String] = []
        var current = String.UnicodeScalarView()
        var it = raw.unicodeScalars.makeIterator()
        while let c = it.next() {
            if c == "\\" {
                guard let e = it.next() else { throw .invalid("value ends in a lone backslash") }
                switch e {
                case "s": current.append(" ")
                case "n": current.append("\n")
                case "t": current.append("\t")
                case "r": current.append("\r")
                case "\\": current.append("\\")
                case ";" where list: current.append(";")
                default: throw .invalid("invalid escape sequence \\\(e)")
                }
            } else if c == ";" && list {
                out.append(String(current))
                current = String.UnicodeScalarView()
            } else {
                current.append(c)
            }
        }
        if !list || !current.isEmpty { out.append(String(current)) }
        return out
    }

    /// Field codes removed from `Exec=`: bgtaskd launches an app with no files or URLs, and `%i`, `%c`,
    /// `%k` (icon, name, location) are for the launcher's own use; the deprecated ones are ignored.
    static let removedFieldCodes: Set<Unicode.Scalar> = ["f", "F", "u", "U", "i", "c", "k", "d", "D", "n", "N", "v", "m"]

    /// Splits a decoded `Exec=` value into arguments as the Desktop Entry Specification says:
    /// - arguments are separated by spaces; an argument (or part of one) in double quotes keeps its
    ///   spaces, and inside quotes `\"`, `` \` ``, `\$` and `\\` stand for `"`, `` ` ``, `$`, `\`
    ///   (any other backslash inside quotes is an error); outside quotes a backslash escapes the next
    ///   character, as in the shell;
    /// - field codes: `%%` is `%`; `%f %F %u %U %i %c %k` (and the deprecated `%d %D %n %N %v %m`) are
    ///   removed, and an argument that was only field codes disappears; any other `%x`, or a `%` at the
    ///   end, is an error;
    /// - an unterminated quote is an error; the result has at least one argument.
    public static func execArguments(_ decoded: String) throws(ConfigError.Kind) -> [String] {
        var words: [String] = []
        var current = String.UnicodeScalarView()
        var inWord = false
        var onlyFieldCodes = true
        var scalars = Array(decoded.unicodeScalars)
        scalars.append(" ")
        var i = 0
        var inQuotes = false
        func endWord() {
            if inWord && !(current.isEmpty && onlyFieldCodes) { words.append(String(current)) }
            current = String.UnicodeScalarView()
            inWord = false
            onlyFieldCodes = true
        }
        while i < scalars.count {
            let c = scalars[i]
            i += 1
            if c == "%" {
                guard i < scalars.count - 1 else { throw .invalid("Exec= ends in a lone %") }
                let code = scalars[i]
                i += 1
                inWord = true
                if code == "%" {
                    current.append("%")
                    onlyFieldCodes = false
                } else if !removedFieldCodes.contains(code) {
                    throw .invalid("invalid field code %\(code) in Exec=")
                }
                continue
            }
            if inQuotes {
                if c == "\"" {
                    inQuotes = false
                } else if c == "\\" {
                    guard i < scalars.count - 1, "\"`$\\".unicodeScalars.contains(scalars[i]) else {
                        throw .invalidQuoting("invalid escape inside quotes in Exec=: only \\\", \\`, \\$ and \\\\ are allowed")
                    }
                    current.append(scalars[i])
                    i += 1
                } else {
                    current.append(c)
                }
                continue
            }
            switch c {
            case " ", "\t", "\n":
                endWord()
            case "\"":
                inQuotes = true
                inWord = true
                onlyFieldCodes = false
            case "\\":
                guard i < scalars.count - 1 else { throw .invalidQuoting("Exec= ends in a lone backslash") }
                current.append(scalars[i])
                i += 1
                inWord = true
                onlyFieldCodes = false
            default:
                current.append(c)
                inWord = true
                onlyFieldCodes = false
            }
        }
        if inQuotes { throw .invalidQuoting("unterminated quote in Exec=") }
        guard let program = words.first, !program.isEmpty else { throw .invalid("no command given") }
        guard program.hasPrefix("/") || !program.contains("/") else {
            throw .invalid("executable must be an absolute path or a bare name to look up in PATH: \(quoted(program))")
        }
        return words
    }
}

/// An app made from a desktop entry (SPEC §13): its manifest, and whether it is exempt from freezing.
public struct DesktopApp: Hashable, Sendable {
    /// The manifest the entry amounts to (`path` is the desktop file).
    public var manifest: AppManifestFile
    /// `X-Bgtaskd-Exempt=true`: never frozen.
    public var exempt: Bool
}

/// Apps from desktop entries: `<data dir>/applications/**/*.desktop` (SPEC §13).
public enum DesktopEntries: Sendable {
    /// The group every desktop entry has.
    public static let mainGroup = "Desktop Entry"
    /// The extension of desktop entry files.
    public static let fileExtension = ".desktop"
    /// The data directories when `$XDG_DATA_DIRS` is unset or empty (the XDG Base Directory default),
    /// followed by Flatpak's system-wide exports.
    public static let defaultDataDirectories = ["/usr/local/share", "/usr/share", "/var/lib/flatpak/exports/share"]

    /// `$XDG_DATA_DIRS` split at `:` (relative entries ignored, as the XDG spec says), or the default.
    public static func dataDirectories(environment value: String?) -> [String] {
        let dirs = (value ?? "").split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        return dirs.isEmpty ? defaultDataDirectories : dirs
    }

    /// The desktop file ID of `relativePath` (below `applications/`): `/` becomes `-`, `.desktop` goes.
    /// `kde4/org.kde.Foo.desktop` → `kde4-org.kde.Foo`.
    public static func desktopFileID(relativePath: String) -> String {
        var id = relativePath.split(separator: "/").joined(separator: "-")
        if id.hasSuffix(fileExtension) { id.removeLast(fileExtension.count) }
        return id
    }

    /// Every app of every data directory, the first directory holding an ID winning (a hidden or
    /// broken entry there still hides the later ones: it is that ID's entry). A bad entry is an error
    /// naming its file, line and key and leaves only that app out; `skipped` says which entries are
    /// not apps and why (Hidden, another Type, a missing TryExec program), for the log.
    public static func loadAll(
        dataDirectories: [String], searchPath: String? = nil
    ) -> (apps: [DesktopApp], errors: [ConfigError], skipped: [String]) {
        var apps: [DesktopApp] = []
        var errors: [ConfigError] = []
        var skipped: [String] = []
        var seen: Set<String> = []
        var entries: [(id: String, path: String)] = []
        for dataDir in dataDirectories {
            let root = joinPath(dataDir, "applications")
            for relative in desktopFiles(below: root) {
                let id = desktopFileID(relativePath: relative)
                guard seen.insert(id).inserted else { continue }
                entries.append((id, joinPath(root, relative)))
            }
        }
        // Read and parsed in parallel (issue 15), gathered in the order found.
        let outcomes = parallelMap(entries) { entry -> Outcome? in
            switch readTextFile(entry.path) {
            case .missing: return nil
            case .failed(let kind): return .invalid([ConfigError(kind, at: SourceLocation(file: entry.path, line: 0))])
            case .text(let text): return parseApp(text, path: entry.path, id: entry.id, searchPath: searchPath)
            }
        }
        for (entry, outcome) in zip(entries, outcomes) {
            switch outcome {
            case nil: continue
            case .app(let app)?: apps.append(app)
            case .skipped(let why)?: skipped.append("\(entry.path): \(why)")
            case .invalid(let e)?: errors += e
            }
        }
        return (apps, errors, skipped)
    }

    /// What one desktop entry amounts to.
    public enum Outcome: Hashable, Sendable {
        case app(DesktopApp)
        /// Not an app, for the reason given (not an error).
        case skipped(String)
        case invalid([ConfigError])
    }

    /// Reads one desktop entry as an app with ID `id` (the desktop file ID). `searchPath` is the `PATH`
    /// in which a bare `TryExec=` name is looked up (default: the process's own).
    public static func parseApp(_ text: String, path: String, id: String, searchPath: String? = nil) -> Outcome {
        let (file, syntaxErrors) = DesktopEntryFile.parse(text, path: path)
        if !syntaxErrors.isEmpty { return .invalid(syntaxErrors) }
        let fileLocation = SourceLocation(file: path, line: 0)
        guard let first = file.groups.first, first.name == mainGroup else {
            return .invalid([ConfigError(.invalid("the first group must be [\(mainGroup)]"),
                                         at: file.groups.first.map { SourceLocation(file: path, line: $0.line) } ?? fileLocation)])
        }
        var errors: [ConfigError] = []
        func at(_ e: DesktopEntryFile.Entry) -> SourceLocation { SourceLocation(file: path, line: e.line) }
        func value<T>(_ key: String, _ decode: (String) throws(ConfigError.Kind) -> T) -> T? {
            guard let e = first.entry(key) else { return nil }
            do { return try decode(e.raw) } catch {
                errors.append(ConfigError(error, at: at(e), key: key))
                return nil
            }
        }
        let header = SourceLocation(file: path, line: first.line)
        let type = value("Type", DesktopEntryValue.string)
        let hidden = value("Hidden", DesktopEntryValue.boolean) ?? false
        guard errors.isEmpty else { return .invalid(errors) }
        if hidden { return .skipped("Hidden=true") }
        guard let type else { return .invalid([ConfigError(.missingRequiredKey, at: header, key: "Type")]) }
        guard type == "Application" else { return .skipped("Type=\(type), not Application") }

        let name = value("Name", DesktopEntryValue.string)
        if name == nil, errors.isEmpty { errors.append(ConfigError(.missingRequiredKey, at: header, key: "Name")) }
        let exec = value("Exec") { (raw: String) throws(ConfigError.Kind) -> [String] in
            try DesktopEntryValue.execArguments(try DesktopEntryValue.string(raw))
        }
        let tryExec = value("TryExec", DesktopEntryValue.string)
        let dbus = value("DBusActivatable", DesktopEntryValue.boolean) ?? false
        let workingDirectory = value("Path") { (raw: String) throws(ConfigError.Kind) -> String? in
            let dir = try DesktopEntryValue.string(raw)
            if dir.isEmpty { return nil }
            guard isAbsoluteCleanPath(dir) else { throw .invalid("Path= must be an absolute, normalized path: \(quoted(dir))") }
            return dir
        } ?? nil
        let aware = value(Keys.lifecycleAware, DesktopEntryValue.boolean) ?? false
        let exempt = value(Keys.exempt, DesktopEntryValue.boolean) ?? false
        let modes = value(Keys.backgroundModes) { (raw: String) throws(ConfigError.Kind) -> Set<BackgroundMode> in
            var modes: Set<BackgroundMode> = []
            for word in try DesktopEntryValue.list(raw) {
                guard let mode = BackgroundMode(rawValue: word) else {
                    throw .invalidChoice(word, allowed: BackgroundMode.allCases.map(\.rawValue))
                }
                modes.insert(mode)
            }
            return modes
        } ?? []
        let identifiers = value(Keys.permittedTaskIdentifiers) { (raw: String) throws(ConfigError.Kind) -> [String] in
            var out: [String] = []
            for word in try DesktopEntryValue.list(raw) {
                guard isValidIdentifier(word) else {
                    throw .invalid("invalid task identifier \(quoted(word)): expected 1-255 characters of A-Za-z0-9._-")
                }
                if !out.contains(word) { out.append(word) }
            }
            return out
        } ?? []
        if !AppManifestFile.isValidID(id) {
            errors.append(ConfigError(
                .invalid("desktop file ID \(quoted(id)) is not a valid app ID (1-255 characters of A-Za-z0-9._-)"),
                at: fileLocation))
        }
        guard errors.isEmpty else { return .invalid(errors) }
        if let tryExec, !tryExec.isEmpty, !isExecutable(tryExec, searchPath: searchPath) {
            return .skipped("TryExec=\(tryExec) is not installed")
        }
        guard let exec else {
            if dbus { return .skipped("no Exec= (D-Bus activated only)") }
            return .invalid([ConfigError(.missingRequiredKey, at: header, key: "Exec")])
        }
        let manifest = AppManifestFile(
            id: id, name: name, exec: exec, workingDirectory: workingDirectory,
            backgroundModes: modes, permittedTaskIdentifiers: identifiers,
            lifecycleAware: aware, path: path)
        return .app(DesktopApp(manifest: manifest, exempt: exempt))
    }

    /// The bgtaskd keys of a desktop entry.
    public enum Keys: Sendable {
        public static let lifecycleAware = "X-Bgtaskd-LifecycleAware"
        public static let backgroundModes = "X-Bgtaskd-BackgroundModes"
        public static let permittedTaskIdentifiers = "X-Bgtaskd-PermittedTaskIdentifiers"
        public static let exempt = "X-Bgtaskd-Exempt"
    }

    /// Whether `program` (absolute, or a bare name looked up in `searchPath`) is an executable file.
    static func isExecutable(_ program: String, searchPath: String?) -> Bool {
        func check(_ path: String) -> Bool {
            var st = stat()
            return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG && access(path, X_OK) == 0
        }
        if program.hasPrefix("/") { return check(program) }
        if program.contains("/") { return false }
        let path = searchPath ?? getenv("PATH").map { String(cString: $0) } ?? "/usr/local/bin:/usr/bin:/bin"
        return path.split(separator: ":").contains { check(joinPath(String($0), program)) }
    }

    /// The `*.desktop` files below `root`, as paths relative to it, sorted bytewise; subdirectories
    /// are walked (their names become part of the ID). Hidden names are skipped; a missing root is empty.
    static func desktopFiles(below root: String, depth: Int = 0) -> [String] {
        guard depth < 8, let dir = opendir(root) else { return [] }
        defer { closedir(dir) }
        var out: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name.hasPrefix(".") { continue }
            let full = joinPath(root, name)
            var st = stat()
            guard stat(full, &st) == 0 else { continue }
            if (st.st_mode & S_IFMT) == S_IFDIR {
                out += desktopFiles(below: full, depth: depth + 1).map { name + "/" + $0 }
            } else if name.hasSuffix(fileExtension), name.count > fileExtension.count {
                out.append(name)
            }
        }
        return out.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }
}
