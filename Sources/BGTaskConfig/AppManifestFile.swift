public import BGTaskModel

/// One `NAME=value` of `Environment=`.
public struct EnvironmentVariable: Hashable, Sendable, CustomStringConvertible {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// `NAME=value`.
    public var description: String { "\(name)=\(value)" }
}

/// An app manifest, `/etc/bgtaskd/apps.d/<app-id>.app` (SPEC §9).
public struct AppManifestFile: Sendable {
    /// `ID=`: the app's reverse-DNS identifier; equals the file name without `.app`.
    public var id: String {
        didSet {
            // A shared path was the old ID's file: it stays that file.
            guard pathIsDirectory, id != oldValue else { return }
            pathStorage = joinPath(pathStorage, oldValue + Self.fileExtension)
            pathIsDirectory = false
        }
    }
    /// `Name=`: display name (default: the ID).
    public var name: String
    /// `Exec=`: the command line split into words, never empty. The first word is an absolute path or a
    /// bare name to look up in `PATH` when launching. No `$VAR` or `%` specifier expansion is done.
    public var exec: [String]
    /// `User=`: the account the app runs as (nil: the daemon's user).
    public var user: Account? {
        get { settings?.user }
        set { change { $0.user = newValue } }
    }
    /// `WorkingDirectory=`: an absolute path, or `~` for the user's home (nil: the daemon's choice).
    public var workingDirectory: String? {
        get { settings?.workingDirectory }
        set { change { $0.workingDirectory = newValue } }
    }
    /// `Environment=`: variables to set, in order of first assignment; a later assignment of the same name
    /// replaces the earlier value. `BGTASKD_APP_ID` and `BGTASKD_SOCKET` are set by the daemon.
    public var environment: [EnvironmentVariable] {
        get { settings?.environment ?? [] }
        set { change { $0.environment = newValue } }
    }
    /// `BackgroundModes=`.
    public var backgroundModes: Set<BackgroundMode>
    /// `PermittedTaskIdentifiers=`: identifiers the app may submit task requests for, in file order.
    public var permittedTaskIdentifiers: [String] {
        get { settings?.permittedTaskIdentifiers ?? [] }
        set { change { $0.permittedTaskIdentifiers = newValue } }
    }
    /// `BackgroundAppRefresh=`: the app's refresh setting until changed at run time (nil: `DefaultAppRefresh=`).
    public var backgroundAppRefresh: Bool?
    /// `RefreshRestricted=`: the administrator forbids refresh; the per-app setting cannot turn it on.
    public var refreshRestricted: Bool
    /// `LifecycleAware=`: the app checks in and handles events (no: a plain program, SPEC §3).
    public var lifecycleAware: Bool
    /// `pathStorage` is the directory of the file `<id>.app` (``sharePath(directory:)``).
    private var pathIsDirectory = false
    /// The file the manifest was read from.
    public var path: String {
        get { pathIsDirectory ? joinPath(pathStorage, id + Self.fileExtension) : pathStorage }
        set {
            pathStorage = newValue
            pathIsDirectory = false
        }
    }
    /// ``path``, or the directory of `<id>.app` (one string shared by the manifests of a directory: 10,000
    /// manifests' paths took 1.1 MiB).
    private var pathStorage: String

    /// The keys most manifests leave unset, kept out of line (`nil` while all are unset): a manifest is
    /// 80 bytes, not 128, in the daemon's table of 10,000 of them.
    private var box: SettingsBox?
    private var settings: Settings? { box?.settings }

    private final class SettingsBox: Hashable, Sendable {
        let settings: Settings
        init(_ settings: Settings) { self.settings = settings }
        static func == (a: SettingsBox, b: SettingsBox) -> Bool { a.settings == b.settings }
        func hash(into hasher: inout Hasher) { hasher.combine(settings) }
    }

    private struct Settings: Hashable, Sendable {
        var user: Account?
        var workingDirectory: String?
        var environment: [EnvironmentVariable] = []
        var permittedTaskIdentifiers: [String] = []
        var isEmpty: Bool {
            user == nil && workingDirectory == nil && environment.isEmpty && permittedTaskIdentifiers.isEmpty
        }
    }

    /// When ``path`` is `directory/<id>.app` (`directory` without a trailing `/`): keeps `directory` in its
    /// place (the same string for every manifest of the directory) instead of a path of its own. ``path``
    /// reads the same, and the manifest compares and hashes as it did.
    public mutating func sharePath(directory: String) {
        guard !pathIsDirectory, !directory.hasSuffix("/") else { return }
        let ext = Self.fileExtension.utf8, dir = directory.utf8, p = pathStorage.utf8, name = id.utf8
        guard p.count == dir.count + 1 + name.count + ext.count, p.starts(with: dir),
            p[p.index(p.startIndex, offsetBy: dir.count)] == UInt8(ascii: "/"),
            p.dropFirst(dir.count + 1).starts(with: name), p.suffix(ext.count).elementsEqual(ext)
        else { return }
        pathStorage = directory
        pathIsDirectory = true
    }

    /// Sets ``path`` to the file `fileName` in `directory`: as ``sharePath(directory:)`` leaves it when
    /// the name is `<id>.app`, without making the whole path first.
    mutating func setPath(directory: String, fileName: String) {
        let ext = Self.fileExtension.utf8, name = fileName.utf8, id = id.utf8
        if !directory.hasSuffix("/"), name.count == id.count + ext.count, name.starts(with: id), name.suffix(ext.count).elementsEqual(ext) {
            pathStorage = directory
            pathIsDirectory = true
        } else {
            path = joinPath(directory, fileName)
        }
    }

    private mutating func change(_ body: (inout Settings) -> Void) {
        var new = settings ?? Settings()
        body(&new)
        box = new.isEmpty ? nil : SettingsBox(new)
    }

    public init(
        id: String,
        name: String? = nil,
        exec: [String],
        user: Account? = nil,
        workingDirectory: String? = nil,
        environment: [EnvironmentVariable] = [],
        backgroundModes: Set<BackgroundMode> = [],
        permittedTaskIdentifiers: [String] = [],
        backgroundAppRefresh: Bool? = nil,
        refreshRestricted: Bool = false,
        lifecycleAware: Bool = true,
        path: String = ""
    ) {
        self.id = id
        self.name = name ?? id
        self.exec = exec
        self.backgroundModes = backgroundModes
        self.backgroundAppRefresh = backgroundAppRefresh
        self.refreshRestricted = refreshRestricted
        self.lifecycleAware = lifecycleAware
        self.pathStorage = path
        let settings = Settings(
            user: user, workingDirectory: workingDirectory, environment: environment,
            permittedTaskIdentifiers: permittedTaskIdentifiers)
        box = settings.isEmpty ? nil : SettingsBox(settings)
    }

    /// The manifest directory's name inside the configuration directory.
    public static let directoryName = "apps.d"
    /// The extension of manifest files.
    public static let fileExtension = ".app"
    /// The section of a manifest.
    public static let section = "App"
    /// Environment variables the daemon sets itself; a manifest may not assign them.
    public static let reservedEnvironment: Set<String> = ["BGTASKD_APP_ID", "BGTASKD_SOCKET"]

    /// `configDirectory/apps.d`.
    public static func appsDirectory(inConfigDirectory configDirectory: String) -> String {
        joinPath(configDirectory, directoryName)
    }

    /// Every key of a manifest, in the order of the documentation.
    public static var keys: [String] {
        schema.keys.map(\.key)
    }

    /// Whether `id` is a valid app ID: 1–255 characters of `A-Za-z0-9._-`, not starting or ending with
    /// `.` and without `..` (an ID names a file and a cgroup, so `.` and `..` must never be one).
    public static func isValidID(_ id: String) -> Bool {
        isValidIdentifier(id)
    }

    /// `configDirectory/apps.d/<id>.app`; nil when `id` is not a valid app ID, so that an ID never names
    /// a file outside `apps.d` (it cannot hold `/`, be `.` or `..`, or contain `..`).
    public static func path(forID id: String, inConfigDirectory configDirectory: String) -> String? {
        guard isValidID(id) else { return nil }
        return joinPath(appsDirectory(inConfigDirectory: configDirectory), id + fileExtension)
    }

    /// Why the manifest of one app could not be loaded.
    public enum LoadFailure: Error, Hashable, Sendable, CustomStringConvertible {
        /// The ID is not a valid app ID: it names no file.
        case invalidID(String)
        /// No manifest at this path (or it cannot be resolved).
        case missing(path: String)
        /// The file exists but is unreadable or invalid: `file:line: key: what` each.
        case invalid([ConfigError])

        public var description: String {
            switch self {
            case .invalidID(let id): "invalid app ID \(quoted(id))"
            case .missing(let path): "\(path): no such app manifest"
            case .invalid(let errors): errors.map(\.description).joined(separator: "; ")
            }
        }
    }

    /// Reads and parses the manifest of app `id` from `configDirectory/apps.d`, exactly as `loadAll`
    /// reads each file (no cache: every call reads the file again).
    public static func load(id: String, inConfigDirectory configDirectory: String) -> Result<AppManifestFile, LoadFailure> {
        guard let path = path(forID: id, inConfigDirectory: configDirectory) else { return .failure(.invalidID(id)) }
        switch readTextFile(path) {
        case .missing:
            return .failure(.missing(path: path))
        case .failed(let kind):
            return .failure(.invalid([ConfigError(kind, at: SourceLocation(file: path, line: 0))]))
        case .text(let text):
            let result = parse(text, path: path)
            guard let manifest = result.manifest else { return .failure(.invalid(result.errors)) }
            return .success(manifest)
        }
    }

    /// Loads every `*.app` file of `appsDirectory` in lexical order. A bad manifest is reported in `errors`
    /// and left out; it does not stop the others. A missing directory has no manifests.
    private enum LoadOutcome: Sendable {
        case missing
        case failed(ConfigError)
        case parsed(AppManifestFile?, [ConfigError], [ConfigWarning])
    }

    public static func loadAll(
        appsDirectory: String
    ) -> (manifests: [AppManifestFile], errors: [ConfigError], warnings: [ConfigWarning]) {
        var manifests: [AppManifestFile] = []
        var errors: [ConfigError] = []
        var warnings: [ConfigWarning] = []
        let paths: [String]
        switch listDirectory(appsDirectory, suffix: fileExtension) {
        case .success(let list): paths = list
        case .failure(let error): return ([], [error], [])
        }
        // Read and parsed in parallel (issue 15), gathered in the directory's order.
        let outcomes = parallelMap(paths) { path -> LoadOutcome in
            switch readTextFile(path) {
            case .missing: return .missing
            case .failed(let kind): return .failed(ConfigError(kind, at: SourceLocation(file: path, line: 0)))
            case .text(let text):
                let result = parse(text, path: path)
                return .parsed(result.manifest, result.errors, result.warnings)
            }
        }
        for outcome in outcomes {
            switch outcome {
            case .missing:
                continue
            case .failed(let error):
                errors.append(error)
            case .parsed(let manifest, let e, let w):
                errors += e
                warnings += w
                if let manifest { manifests.append(manifest) }
            }
        }
        return (manifests, errors, warnings)
    }

    /// Parses one manifest. `path` names the file in messages, and its last component without `.app`
    /// is the app ID the file must declare. `manifest` is nil when there are errors.
    public static func parse(
        _ text: String, path: String
    ) -> (manifest: AppManifestFile?, errors: [ConfigError], warnings: [ConfigWarning]) {
        var errors: [ConfigError] = []
        var warnings: [ConfigWarning] = []
        var draft = Draft()
        var assigned = AssignmentLog()
        let file = ParsedConfigFile.parse(text, file: path)
        schema.apply(file, to: &draft, errors: &errors, warnings: &warnings, assigned: &assigned)
        // A key of [App] that bgtaskd does not know is a mistake in the manifest (a misspelled
        // BackgroundModes= would silently give the app less than it asks for): an error, so the app is
        // left out at start and a reload is refused, as for any other bad value.
        warnings.removeAll { w in
            guard w.kind == .unknownKey else { return false }
            errors.append(ConfigError(.invalid("unknown key"), at: w.location, key: w.key))
            return true
        }

        let fileLocation = SourceLocation(file: path, line: 0)
        let baseName = String(path.utf8.lastIndex(of: UInt8(ascii: "/")).map { path[path.utf8.index(after: $0)...] } ?? Substring(path))
        let fileID = baseName.hasSuffix(fileExtension) ? String(baseName.dropLast(fileExtension.count)) : baseName
        guard let header = file.sections.first(where: { $0.name == section }) else {
            if errors.isEmpty {
                errors.append(ConfigError(.missingSection(section), at: fileLocation))
            }
            return (nil, errors, warnings)
        }
        if let id = draft.id {
            if id != fileID {
                errors.append(ConfigError(
                    .invalid("ID \(quoted(id)) does not match the file name \(quoted(baseName))"),
                    at: assigned.location("ID") ?? fileLocation, key: "ID"))
            }
        } else if !isValidID(fileID) {
            errors.append(ConfigError(
                .invalid("file name \(quoted(baseName)) is not a valid app ID followed by \(fileExtension)"),
                at: fileLocation))
        }
        guard let exec = draft.exec else {
            // An invalid Exec= is already reported; "missing" would only repeat it.
            if !errors.contains(where: { $0.key == "Exec" }) {
                errors.append(ConfigError(.missingRequiredKey, at: header.location, key: "Exec"))
            }
            return (nil, errors, warnings)
        }
        guard errors.isEmpty else {
            return (nil, errors, warnings)
        }
        let manifest = AppManifestFile(
            id: fileID,
            name: draft.name,
            exec: exec,
            user: draft.user,
            workingDirectory: draft.workingDirectory,
            environment: draft.environment,
            backgroundModes: draft.backgroundModes,
            permittedTaskIdentifiers: draft.permittedTaskIdentifiers,
            backgroundAppRefresh: draft.backgroundAppRefresh,
            refreshRestricted: draft.refreshRestricted,
            lifecycleAware: draft.lifecycleAware,
            path: path)
        return (manifest, [], warnings)
    }

    /// The manifest while its file is being read: required keys may still be missing.
    struct Draft: Sendable {
        var id: String?
        var name: String?
        var exec: [String]?
        var user: Account?
        var workingDirectory: String?
        var environment: [EnvironmentVariable] = []
        var backgroundModes: Set<BackgroundMode> = []
        var permittedTaskIdentifiers: [String] = []
        var backgroundAppRefresh: Bool?
        var refreshRestricted = false
        var lifecycleAware = true
    }

    static let schema = Schema<Draft>([
        KeyDefinition(section: section, key: "ID", apply: { draft, value throws(ConfigError.Kind) in
            if value.isEmpty { draft.id = nil; return }
            guard isValidID(value) else {
                throw .invalid("invalid app ID \(quoted(value)): expected 1-255 characters of A-Za-z0-9._-, "
                    + "not starting or ending with '.', without '..'")
            }
            draft.id = value
        }, format: { $0.id ?? "" }),
        KeyDefinition(section: section, key: "Name", apply: { draft, value throws(ConfigError.Kind) in
            draft.name = value.isEmpty ? nil : value
        }, format: { $0.name ?? "" }),
        KeyDefinition(section: section, key: "Exec", apply: { draft, value throws(ConfigError.Kind) in
            if value.isEmpty { draft.exec = nil; return }
            let words = try ConfigWords.split(value)
            guard let program = words.first, !program.isEmpty else {
                throw .invalid("no command given")
            }
            if let prefix = program.first, "@-:+!".contains(prefix) {
                throw .invalid("executable prefixes (@, -, :, +, !) are not supported: \(quoted(program))")
            }
            guard program.hasPrefix("/") || !program.containsBytes("/") else {
                throw .invalid("executable must be an absolute path or a bare name to look up in PATH: \(quoted(program))")
            }
            draft.exec = words
        }, format: { $0.exec?.joined(separator: " ") ?? "" }),
        KeyDefinition(section: section, key: "User", apply: { draft, value throws(ConfigError.Kind) in
            if value.isEmpty { draft.user = nil; return }
            guard let user = Account.parse(value) else {
                throw .invalid("invalid user name or uid \(quoted(value))")
            }
            draft.user = user
        }, format: { $0.user?.description ?? "" }),
        KeyDefinition(section: section, key: "WorkingDirectory", apply: { draft, value throws(ConfigError.Kind) in
            if value.isEmpty { draft.workingDirectory = nil; return }
            guard value == "~" || isAbsoluteCleanPath(value) else {
                throw .invalid("working directory must be an absolute, normalized path or ~: \(quoted(value))")
            }
            draft.workingDirectory = value
        }, format: { $0.workingDirectory ?? "" }),
        KeyDefinition(section: section, key: "Environment", apply: { draft, value throws(ConfigError.Kind) in
            if value.isEmpty { draft.environment = []; return }
            for word in try ConfigWords.split(value) {
                guard let equals = word.firstIndex(of: "="), isValidEnvironmentName(word[..<equals]) else {
                    throw .invalid("invalid environment assignment \(quoted(word)), expected NAME=VALUE")
                }
                let name = String(word[..<equals])
                guard !reservedEnvironment.contains(name) else {
                    throw .invalid("\(name) is set by bgtaskd and cannot be assigned")
                }
                draft.environment.removeAll { $0.name == name }
                draft.environment.append(EnvironmentVariable(name: name, value: String(word[word.index(after: equals)...])))
            }
        }, format: { $0.environment.map(\.description).joined(separator: " ") }),
        KeyDefinition(section: section, key: "BackgroundModes", apply: { draft, value throws(ConfigError.Kind) in
            if value.isEmpty { draft.backgroundModes = []; return }
            for word in value.split(whereSeparator: isWhitespace) {
                draft.backgroundModes.insert(try parseChoice(String(word), as: BackgroundMode.self))
            }
        }, format: { draft in
            BackgroundMode.allCases.filter { draft.backgroundModes.contains($0) }.map(\.rawValue).joined(separator: " ")
        }),
        KeyDefinition(section: section, key: "PermittedTaskIdentifiers", apply: { draft, value throws(ConfigError.Kind) in
            if value.isEmpty { draft.permittedTaskIdentifiers = []; return }
            for word in value.split(whereSeparator: isWhitespace).map(String.init) {
                guard isValidIdentifier(word) else {
                    throw .invalid("invalid task identifier \(quoted(word)): expected 1-255 characters of A-Za-z0-9._-")
                }
                if !draft.permittedTaskIdentifiers.contains(word) {
                    draft.permittedTaskIdentifiers.append(word)
                }
            }
        }, format: { $0.permittedTaskIdentifiers.joined(separator: " ") }),
        KeyDefinition(section: section, key: "BackgroundAppRefresh", apply: { draft, value throws(ConfigError.Kind) in
            draft.backgroundAppRefresh = value.isEmpty ? nil : try parseBool(value)
        }, format: { $0.backgroundAppRefresh.map { $0 ? "on" : "off" } ?? "" }),
        KeyDefinition(section: section, key: "RefreshRestricted", apply: { draft, value throws(ConfigError.Kind) in
            draft.refreshRestricted = value.isEmpty ? false : try parseBool(value)
        }, format: { ConfigBoolean.format($0.refreshRestricted) }),
        KeyDefinition(section: section, key: "LifecycleAware", apply: { draft, value throws(ConfigError.Kind) in
            draft.lifecycleAware = value.isEmpty ? true : try parseBool(value)
        }, format: { ConfigBoolean.format($0.lifecycleAware) }),
    ])
}

/// 1–255 characters of `A-Za-z0-9._-`, not starting or ending with `.`, without `..`.
func isValidIdentifier(_ id: String) -> Bool {
    guard !id.isEmpty, id.utf8.count <= 255, !id.hasPrefix("."), !id.hasSuffix("."), !id.containsBytes("..") else {
        return false
    }
    return id.utf8.allSatisfy { c in
        (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39)
            || c == 0x2E || c == 0x5F || c == 0x2D
    }
}

private func isValidEnvironmentName(_ name: Substring) -> Bool {
    guard let first = name.utf8.first, !(first >= 0x30 && first <= 0x39) else { return false }
    return name.utf8.allSatisfy { c in
        (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39) || c == 0x5F
    }
}

extension AppManifestFile: Hashable {
    /// Equal when every key and the path are (however the path is kept, ``sharePath(directory:)``).
    public static func == (a: AppManifestFile, b: AppManifestFile) -> Bool {
        guard a.id == b.id, a.name == b.name, a.exec == b.exec, a.backgroundModes == b.backgroundModes,
            a.backgroundAppRefresh == b.backgroundAppRefresh, a.refreshRestricted == b.refreshRestricted,
            a.lifecycleAware == b.lifecycleAware, a.box == b.box
        else { return false }
        // Both kept alike: their storage decides (a shared directory never ends with `/`).
        return a.pathIsDirectory == b.pathIsDirectory ? a.pathStorage == b.pathStorage : a.path == b.path
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(name)
        hasher.combine(exec)
        hasher.combine(backgroundModes)
        hasher.combine(backgroundAppRefresh)
        hasher.combine(refreshRestricted)
        hasher.combine(lifecycleAware)
        hasher.combine(box)
        hasher.combine(path)
    }
}
