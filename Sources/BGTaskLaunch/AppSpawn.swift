public import BGTaskConfig
import CSystemd

#if canImport(Glibc)
import Glibc
#endif

/// A manifest's `User=` looked up in the user database.
public struct ResolvedUser: Equatable, Sendable {
    public var uid: UInt32
    public var gid: UInt32
    /// nil for a numeric uid without a passwd entry.
    public var name: String?
    public var home: String?

    public init(uid: UInt32, gid: UInt32, name: String?, home: String?) {
        self.uid = uid
        self.gid = gid
        self.name = name
        self.home = home
    }

    /// getpwnam/getpwuid; a numeric uid without an entry runs with gid = uid. nil: no such user name.
    public static func resolve(_ account: Account) -> ResolvedUser? {
        switch account {
        case .id(let uid):
            if let pw = getpwuid(uid) {
                return ResolvedUser(uid: uid, gid: pw.pointee.pw_gid, name: String(cString: pw.pointee.pw_name),
                                    home: String(cString: pw.pointee.pw_dir))
            }
            return ResolvedUser(uid: uid, gid: uid, name: nil, home: nil)
        case .name(let name):
            guard let pw = getpwnam(name) else { return nil }
            return ResolvedUser(uid: pw.pointee.pw_uid, gid: pw.pointee.pw_gid, name: name, home: String(cString: pw.pointee.pw_dir))
        }
    }
}

/// The environment of a launched app (SPEC §9): a few variables of the spawner's own, the user's
/// HOME/USER/LOGNAME, the manifest's `Environment=`, then `BGTASKD_APP_ID` and `BGTASKD_SOCKET`.
public enum AppEnvironment: Sendable {
    /// Passed on from the spawner's environment.
    public static let inheritedNames = ["PATH", "LANG", "TZ", "HOME", "USER", "LOGNAME", "XDG_RUNTIME_DIR", "WAYLAND_DISPLAY", "DISPLAY"]
    public static let defaultPath = "/usr/local/bin:/usr/bin:/bin"

    /// `NAME=value` entries sorted by name (pure).
    public static func build(inherited: [String: String], user: ResolvedUser?, manifestEnvironment: [EnvironmentVariable],
                             appID: String, socketPath: String) -> [String]
    {
        var env: [String: String] = [:]
        for key in inheritedNames {
            if let v = inherited[key] { env[key] = v }
        }
        if env["PATH"] == nil { env["PATH"] = defaultPath }
        if let home = user?.home { env["HOME"] = home }
        if let name = user?.name { env["USER"] = name; env["LOGNAME"] = name }
        for v in manifestEnvironment { env[v.name] = v.value }
        env["BGTASKD_APP_ID"] = appID
        env["BGTASKD_SOCKET"] = socketPath
        return env.sorted(by: { $0.key < $1.key }).map { "\($0.key)=\($0.value)" }
    }

    /// Where the launcher looks up an `Exec=` without a slash: the manifest's own `PATH=` if it sets
    /// one, else `ownPath` (the launcher's own `PATH`, as the in-process spawn uses the daemon's) —
    /// never the `PATH` the daemon passed on, which would let it choose the program.
    public static func executableSearchPath(manifestEnvironment: [EnvironmentVariable], ownPath: String?) -> String {
        manifestEnvironment.last(where: { $0.name == "PATH" })?.value ?? ownPath ?? defaultPath
    }

    /// The inherited variables as this process has them.
    public static func current() -> [String: String] {
        var out: [String: String] = [:]
        for key in inheritedNames {
            if let v = getenv(key) { out[key] = String(cString: v) }
        }
        return out
    }
}

/// What to start for a manifest, before the executable is looked up: the part the daemon decides.
public struct LaunchPlan: Equatable, Sendable {
    public var argv: [String]
    public var account: Account?
    public var user: ResolvedUser?
    /// `WorkingDirectory=`, with `~` made the user's home.
    public var workingDirectory: String?
    public var environment: [String]

    /// Fails when `Exec=` is empty or `User=` does not exist. Without `User=` the app runs as
    /// `defaultAccount` (nil: as the spawning process).
    public static func make(_ manifest: AppManifestFile, socketPath: String,
                            inherited: [String: String], defaultAccount: Account? = nil) -> Result<LaunchPlan, LaunchFailure>
    {
        guard !manifest.exec.isEmpty else { return .failure(LaunchFailure(.spawnFailed, "Exec= is empty")) }
        var user: ResolvedUser?
        if let account = manifest.user ?? defaultAccount {
            guard let resolved = ResolvedUser.resolve(account) else {
                return .failure(LaunchFailure(.noSuchUser, "User=\(account): no such user"))
            }
            user = resolved
        }
        var cwd = manifest.workingDirectory
        if cwd == "~" {
            cwd = user?.home ?? inherited["HOME"]
        }
        let env = AppEnvironment.build(inherited: inherited, user: user, manifestEnvironment: manifest.environment,
                                       appID: manifest.id, socketPath: socketPath)
        return .success(LaunchPlan(argv: manifest.exec, account: manifest.user, user: user, workingDirectory: cwd, environment: env))
    }

    /// bgtaskd-launcher's plan for `request`: the app's manifest read from `configDirectory` now (no
    /// cache, so a changed manifest needs no reload), or without one its desktop entry as the configuration
    /// there allows (``DesktopLaunch``), made into a plan by the same code as the
    /// in-process spawn, with the request's session variables as the inherited ones. An app without
    /// `User=` runs as `requesterUID` — the daemon's own user, as when the daemon spawns it itself —
    /// never as the launcher's root.
    public static func make(for request: SpawnRequest, configDirectory: String,
                            requesterUID: UInt32) -> Result<(plan: LaunchPlan, manifest: AppManifestFile), LaunchFailure> {
        let manifest: AppManifestFile
        switch AppManifestFile.load(id: request.appID, inConfigDirectory: configDirectory) {
        case .success(let m): manifest = m
        case .failure(.missing(let path)):
            // No manifest: a desktop entry the administrator's configuration names (DesktopLaunch.swift).
            switch DesktopLaunch.manifest(id: request.appID, configDirectory: configDirectory, noManifestAt: path) {
            case .success(let m): manifest = m
            case .failure(let failure): return .failure(failure)
            }
        case .failure(.invalidID(let id)): return .failure(LaunchFailure(.invalidRequest, "appId: invalid app ID \"\(id)\""))
        case .failure(let failure): return .failure(LaunchFailure(.invalidManifest, failure.description))
        }
        return make(manifest, socketPath: request.socketPath, inherited: request.environment,
                    defaultAccount: .id(requesterUID)).map { ($0, manifest) }
    }
}

/// fork/exec of an app (bgtaskd_spawn_app in the C shim); used by bgtaskd in-process and by bgtaskd-launcher.
public enum AppSpawner: Sendable {
    /// `name` when it holds a slash and is executable, else the first executable `dir/name` in `searchPath`.
    public static func resolveExecutable(_ name: String, searchPath: String) -> String? {
        if name.contains("/") { return access(name, X_OK) == 0 ? name : nil }
        for dir in searchPath.split(separator: ":") {
            let candidate = "\(dir)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// Starts `path` (session leader, umask 0022, no ambient capabilities) as `user`; the child joins
    /// the cgroup of `cgroupProcsFD` first. Returns the pid (a child of this process).
    public static func spawn(path: String, argv: [String], environment: [String], workingDirectory: String?,
                             user: ResolvedUser?, cgroupProcsFD: Int32?) -> Result<Int32, LaunchFailure>
    {
        var stage: Int32 = 0
        let pid = withCStrings(argv) { argvp in
            withCStrings(environment) { envp in
                bgtaskd_spawn_app(path, argvp, envp, workingDirectory, user?.uid ?? 0, user?.gid ?? 0, user == nil ? 0 : 1,
                                  cgroupProcsFD ?? -1, &stage)
            }
        }
        if pid > 0 { return .success(pid) }
        let reason = String(cString: strerror(-pid))
        switch Int(stage) {
        case BGTASKD_SPAWN_CGROUP:
            return .failure(LaunchFailure(.cgroupFailed, "\(path): cannot join the app's cgroup: \(reason)"))
        case BGTASKD_SPAWN_USER:
            return .failure(LaunchFailure(.spawnFailed, "\(path): cannot become uid \(user?.uid ?? 0): \(reason)"))
        case BGTASKD_SPAWN_CWD:
            return .failure(LaunchFailure(.spawnFailed, "\(path): WorkingDirectory=\(workingDirectory ?? ""): \(reason)"))
        default:
            return .failure(LaunchFailure(.spawnFailed, "\(path): \(reason)"))
        }
    }
}

/// Calls `body` with a NULL-terminated `char *[]` of `strings`.
func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>?) -> R) -> R {
    var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    pointers.append(nil)
    defer { for p in pointers { free(p) } }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress) }
}
