import BGTaskConfig
import BGTaskCore

#if canImport(Glibc)
import Glibc
#endif

/// The configuration the daemon runs with: bgtaskd.conf (+ drop-ins), the app manifests, and what the
/// flags override. A bad bgtaskd.conf refuses the whole load; a bad manifest only leaves that app out.
struct LoadedConfiguration: Sendable {
    var daemon: DaemonConfig
    var manifests: [AppID: AppManifestFile]
    var socketPath: String
    /// bgtaskd-launcher's socket (`--launcher-socket`, else `LauncherSocket=`); nil: spawn in-process.
    var launcherSocketPath: String? = nil
    var controlGroupID: UInt32?
    /// Unknown keys, and manifests that could not be loaded (file:line: key: what).
    var warnings: [String]
    /// Apps never frozen: `[Apps] Exempt=` and desktop entries with `X-Bgtaskd-Exempt=true` (DesktopApps.swift).
    var exempt: Set<AppID> = []
    /// Manifests that could not be loaded: left out at start, a refused reload (issue 12).
    var manifestErrors: [ConfigError] = []
    /// Manifests taken from the manifest cache at start-up, their files unchanged.
    var manifestsFromCache = 0

    var maxMessageSize: Int { daemon.maxMessageSize }

    var lifecycle: LifecycleConfig {
        let d = daemon
        var config = LifecycleConfig(
            didEnterBackgroundTimeout: .microseconds(d.didEnterBackgroundTimeoutUSec),
            backgroundTimeBudget: .microseconds(d.backgroundTimeBudgetUSec),
            expirationWarning: .microseconds(d.expirationWarningUSec),
            maxBackgroundTasksPerApp: d.maxBackgroundTasksPerApp,
            launchTimeout: .microseconds(d.launchTimeoutUSec),
            willTerminateTimeout: .microseconds(d.willTerminateTimeoutUSec),
            killTimeout: .microseconds(d.killTimeoutUSec),
            refreshTaskBudget: .microseconds(d.refreshTaskBudgetUSec),
            processingTaskBudget: .microseconds(d.processingTaskBudgetUSec),
            controlGroup: controlGroupID,
            busCallBudget: .microseconds(d.busCallBudgetUSec),
            lockRecheck: .microseconds(d.lockRecheckUSec),
            lockDeferral: .microseconds(d.lockDeferralUSec),
            freezeTimeout: .microseconds(d.freezeTimeoutUSec),
            freezeRetry: .microseconds(d.freezeRetryUSec),
            snapshotTimeout: .microseconds(d.snapshotTimeoutUSec)
        )
        config.continuedTaskStall = .microseconds(d.continuedTaskStallUSec)
        return config
    }

    /// bgtaskd.conf (+ drop-ins) and the manifests (`loadDaemon` then `loadApps`).
    static func load(from options: DaemonOptions) -> Result<LoadedConfiguration, LoadError> {
        loadDaemon(from: options).map { config in
            var config = config
            config.loadApps(from: options)
            return config
        }
    }

    /// bgtaskd.conf (+ drop-ins) and what the flags override, without any app (issue 15: start-up binds
    /// the socket and sends READY=1 with this; `loadApps` follows off the queue, and calls wait for it).
    static func loadDaemon(from options: DaemonOptions) -> Result<LoadedConfiguration, LoadError> {
        let daemon: DaemonConfig
        var warnings: [String] = []
        do {
            let loaded = try DaemonConfig.load(configDirectory: options.configDir)
            daemon = loaded.config
            warnings += loaded.warnings.map(\.description)
        } catch {
            return .failure(LoadError(description: error.description, source: error))
        }
        var gid: UInt32?
        if let group = daemon.controlGroup {
            switch group {
            case .id(let id): gid = id
            case .name(let name):
                guard let gr = getgrnam(name) else {
                    return .failure(LoadError(description: "ControlGroup=\(name): no such group"))
                }
                gid = gr.pointee.gr_gid
            }
        }
        // --socket wins; then an explicit Socket=; else the socket lives in the runtime directory.
        let socket = options.socketPath
            ?? (daemon.socket != DaemonConfig().socket ? daemon.socket : options.runtimeDir + "/io.bgtaskd")
        var loaded = LoadedConfiguration(daemon: daemon, manifests: [:], socketPath: socket, controlGroupID: gid, warnings: warnings)
        // --launcher-socket wins (an empty one: spawn in-process whatever the file says).
        loaded.launcherSocketPath = options.launcherSocketPath.map { $0.isEmpty ? nil : $0 } ?? daemon.launcherSocket
        return .success(loaded)
    }

    /// Adds the apps: the manifests of `apps.d` (a bad one is a warning and left out) and the desktop
    /// entries. Reads files: never on the state queue at start-up (issue 15).
    /// `cachePath`: the manifest cache of the state directory (start-up only; `ManifestCache`): the
    /// cache to write for the next start is returned, nil when the one read is still exact.
    @discardableResult
    mutating func loadApps(from options: DaemonOptions, cachePath: String? = nil) -> ManifestCache? {
        let directory = AppManifestFile.appsDirectory(inConfigDirectory: options.configDir)
        var apps: (manifests: [AppManifestFile], errors: [ConfigError], warnings: [ConfigWarning])
        var update: ManifestCache?
        if let cachePath {
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            var cached = AppManifestFile.loadAll(
                appsDirectory: directory, readCache: { ManifestCache.read(path: cachePath, appsDirectory: directory) },
                now: Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec))
            apps = (cached.manifests, cached.errors, cached.warnings)
            cached.manifests = []  // `apps` holds the only reference: its manifests can be moved out below
            manifestsFromCache = cached.fromCache
            update = cached.updatedCache
        } else {
            apps = AppManifestFile.loadAll(appsDirectory: directory)
        }
        warnings += apps.errors.map { "\($0) (app left out)" }
        warnings += apps.warnings.map(\.description)
        manifests.reserveCapacity(manifests.count + apps.manifests.count)
        // Each manifest moved into the table (an empty one left in its place): neither a copy of its
        // strings retained nor, with the list, released (10,000 manifests: ~3% of exec → first ListApps).
        let empty = AppManifestFile(id: "", exec: [], path: "")
        apps.manifests.withUnsafeMutableBufferPointer { buffer in
            for i in buffer.indices {
                var m = buffer.moveElement(from: i)
                buffer.initializeElement(at: i, to: empty)
                m.sharePath(directory: directory)
                if let id = AppID(m.id) { manifests[id] = consume m }
            }
        }
        manifestErrors = apps.errors
        addDesktopApps()
        return update
    }

    struct LoadError: Error, CustomStringConvertible, Sendable {
        var description: String
        /// File, line and key, when a file is at fault.
        var source: ConfigError? = nil
    }
}

/// Resolves a manifest's `User=` to uid and gid (nil: run as the daemon's own user).
func resolveUser(_ account: Account?) -> (uid: UInt32, gid: UInt32, name: String?)? {
    guard let account else { return nil }
    switch account {
    case .id(let uid):
        if let pw = getpwuid(uid) { return (uid, pw.pointee.pw_gid, String(cString: pw.pointee.pw_name)) }
        return (uid, uid, nil)
    case .name(let name):
        guard let pw = getpwnam(name) else { return nil }
        return (pw.pointee.pw_uid, pw.pointee.pw_gid, name)
    }
}
