import BGTaskConfig
import BGTaskCore
import BGTaskProtocol
import BGTaskVarlink
import Dispatch
import Logging

/// The I/O of Background App Refresh (SPEC §5, §6, §7): the state file (``StateStore``: a change is
/// answered once it is durable) and the power supply. The refresh machine that decides is the core's
/// (``DaemonCore/refresh``); the service feeds it and performs its actions (DaemonService+Refresh.swift).
/// Runs on the daemon's queue.
final class RefreshController: @unchecked Sendable {
    // @unchecked: used only on the daemon's queue.
    private let logger: Logger
    let store: StateStore
    /// The state read at start-up (fed to the core as ``RefreshInput/stateLoaded(_:)``).
    let loaded: RefreshState
    private var loadWarnings: [String]
    private var power: PowerSupplyMonitor?

    init(
        queue: DispatchQueue, logger: Logger, stateDirectory: String, powerSupplyPath: String? = "/sys/class/power_supply",
        powerChanged: @escaping (Bool) -> Void
    ) {
        self.logger = logger
        store = StateStore(directory: stateDirectory, queue: queue)
        let loaded = store.load()
        self.loaded = loaded.state
        loadWarnings = loaded.warnings
        if let powerSupplyPath {
            power = PowerSupplyMonitor(path: powerSupplyPath, queue: queue, onChange: powerChanged)
        }
    }

    /// The machine's view of the configuration.
    static func refreshConfig(_ config: LoadedConfiguration) -> RefreshConfig {
        let d = config.daemon
        // mapValues: the keys' table kept as it is (no key hashed again), each manifest read in place.
        let apps = config.manifests.mapValues { m in
            RefreshConfig.App(
                permittedIdentifiers: Set(m.permittedTaskIdentifiers),
                backgroundModes: Set(m.backgroundModes.compactMap { BackgroundMode(rawValue: $0.rawValue) }),
                setting: m.backgroundAppRefresh, restricted: m.refreshRestricted)
        }
        return RefreshConfig(
            mode: RefreshMode(rawValue: d.backgroundAppRefresh.rawValue) ?? .on, defaultAppRefresh: d.defaultAppRefresh,
            minimumRefreshInterval: .microseconds(d.minimumRefreshIntervalUSec), processingIdle: .microseconds(d.processingIdleUSec),
            apps: apps, energy: energyPolicy(d.energy))
    }

    /// `[Buckets]`, `RemoteWakesPerHour=`, `WakeAlignmentSec=` as the machine takes them (SPEC §16).
    static func energyPolicy(_ e: EnergyConfig) -> EnergyPolicyConfig {
        var quotas: [StandbyBucket: Int] = [:]
        quotas[.active] = e.activeQuota
        quotas[.workingSet] = e.workingSetQuota
        quotas[.frequent] = e.frequentQuota
        quotas[.rare] = e.rareQuota
        quotas[.restricted] = e.restrictedQuota
        return EnergyPolicyConfig(
            activeBucket: .microseconds(e.activeBucketUSec), quotas: quotas, remoteWakesPerHour: e.remoteWakesPerHour,
            wakeAlignment: .microseconds(e.wakeAlignmentUSec))
    }

    /// Start-up (apps registered): says what the state file held that could not be read, starts following
    /// the power supply and returns what it says now, if anything.
    func start() -> Bool? {
        for w in loadWarnings { logger.warning("refresh state: \(w)") }
        loadWarnings = []
        let detected = power?.start()
        if let detected {
            logger.info("external power \(detected ? "connected" : "not connected") (\(power?.path ?? ""), following changes by \(power?.mode ?? "none"))")
        }
        return detected
    }

    /// The power supply changed what the core goes by.
    func logPowerChanged(_ onPower: Bool) {
        logger.info("external power \(onPower ? "connected" : "disconnected") (\(power?.path ?? ""))")
    }

    /// Saves the state `read` returns when the write starts; `completion(false)` if the write failed (said
    /// in the log). `soon: false`: no call waits for it (``StateStore/save(reading:soon:completion:)``).
    func save(reading read: @escaping () -> RefreshState?, soon: Bool = true, completion: @escaping (Bool) -> Void) {
        store.save(reading: read, soon: soon) { [weak self] error in
            if let error { self?.logger.error("could not save the refresh state: \(error)") }
            completion(error == nil)
        }
    }

    func stop() {
        power?.stop()
    }

    /// The daemon's exit: the state saved and not written yet, written now.
    func flush() {
        if let error = store.flush() { logger.error("could not save the refresh state: \(error)") }
    }

    /// A refusal as the interface of the call names it (BGTaskProtocol's contract).
    static func wireError(_ failure: RefreshCallError, manager: Bool) -> VarlinkError {
        if manager {
            switch failure {
            case .noSuchApp(let app): return ManagerError.noSuchApp(appId: app.rawValue).varlinkError
            case .notPermitted(let identifier): return ManagerError.notPermitted(identifier: identifier).varlinkError
            case .modeNotDeclared(let mode): return ManagerError.modeNotDeclared(mode: mode.rawValue).varlinkError
            case .unavailable(let reason): return ManagerError.unavailable(reason: reason).varlinkError
            case .tooManyPendingTaskRequests:
                // Only SubmitTaskRequest (io.bgtaskd.App) adds requests; the Manager interface declares no such error.
                return ManagerError.unavailable(reason: "too-many-pending-task-requests").varlinkError
            }
        }
        switch failure {
        case .noSuchApp(let app): return AppError.noSuchApp(appId: app.rawValue).varlinkError
        case .notPermitted(let identifier): return AppError.notPermitted(identifier: identifier).varlinkError
        case .modeNotDeclared(let mode): return AppError.modeNotDeclared(mode: mode.rawValue).varlinkError
        case .unavailable(let reason): return AppError.unavailable(reason: reason).varlinkError
        case .tooManyPendingTaskRequests(let kind): return AppError.tooManyPendingTaskRequests(kind: kind.rawValue).varlinkError
        }
    }
}
