import BGTaskConfig
import BGTaskModel
import Logging

/// What a reload's caller is told, on the queue: the report, or the error that kept the old configuration.
typealias ReloadCompletion = @Sendable (Result<ReloadReport, LoadedConfiguration.LoadError>) -> Void

/// The reloads under way (on the queue): one read of the files at a time; reloads asked for while it
/// reads wait for the next one.
struct ReloadRuns {
    var reading = false
    var waiting: [ReloadCompletion] = []
}

/// What a reload read off the queue: the configuration (or why it is refused), compared there with the
/// one in force (`inForce`, the service's when the read began: only a reload changes it, one at a time),
/// and the manifest cache to write for the next start or reload.
struct ReadForReload: Sendable {
    var configuration: Result<LoadedConfiguration, LoadedConfiguration.LoadError>
    /// What changed and is put in force, and each change to a key read only at start (not applied).
    var report = ReloadReport()
    /// The apps whose manifest was added or differs from the one in force.
    var changedApps: Set<AppID> = []
    var cacheUpdate: ManifestCache?
    var cachePath: String
}

extension Daemon {
    /// The reading a reload does: bgtaskd.conf, then the manifests (unchanged ones from the manifest cache,
    /// as at start-up: ten thousand manifests are ~100 ms of CPU read one by one). Runs off the queue.
    static func readForReload(_ options: DaemonOptions, inForce old: LoadedConfiguration) -> @Sendable () -> ReadForReload {
        {
            let cachePath = options.stateDir + "/" + ManifestCache.fileName
            var update: ManifestCache?
            var loaded = LoadedConfiguration.loadDaemon(from: options).map { config in
                var config = config
                update = config.loadApps(from: options, cachePath: cachePath)
                return config
            }
            // A manifest that cannot be read is left out at start; on reload it would end its running app,
            // so the reload is refused instead and the old configuration stays (SPEC §9).
            if case .success(let config) = loaded, let bad = config.manifestErrors.first {
                loaded = .failure(LoadedConfiguration.LoadError(description: bad.description, source: bad))
            }
            var read = ReadForReload(configuration: loaded, cacheUpdate: update, cachePath: cachePath)
            if case .success(var config) = loaded {
                // Keys read only at start keep their value in force; each change to one is said (SPEC §9).
                read.report.notApplied = config.keepStartOnlyKeys(of: old, configDirectory: options.configDir)
                read.report.applied = config.appliedChanges(from: old)
                read.changedApps = Set(config.manifests.lazy.filter { old.manifests[$0.key] != $0.value }.map(\.key))
                read.configuration = .success(config)
            }
            return read
        }
    }

    /// Nothing new starts once the stop has begun (`DaemonLifecycle`): no RELOADING=1, no READY=1.
    static func reloadIgnored(_ logger: Logger) -> ReloadReport {
        let note = "bgtaskd is stopping: the configuration in force stays until it exits"
        logger.info("reload ignored: \(note)")
        return ReloadReport(applied: [], notApplied: [note])
    }
}
