import BGTaskModel

#if canImport(Glibc)
import Glibc
#endif

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
            let name = FileIO.name(of: entry)
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
