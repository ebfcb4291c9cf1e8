import BGTaskConfig
import BGTaskCore
import BGTaskProtocol
import BGTaskVarlink
import Dispatch
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// What the refresh shell needs from the daemon's service: the lifecycle core's view of an app, feeding
/// it, answering a call through it, and journaling. A protocol (held weakly), not the service itself.
protocol RefreshHost: AnyObject {
    /// The lifecycle core's facts about `app` (nil: not registered).
    func refreshFacts(_ app: AppID) -> RefreshAppFacts?
    /// Feeds the lifecycle core one input (no call to answer).
    func feed(_ input: Input)
    /// Feeds the lifecycle core an input that answers `request`; `answer` holds the reply back.
    func run(_ input: Input, for request: VarlinkRequest, answer: ((@escaping () -> Void) -> Void)?)
    /// Journals a decision (and shows it on Monitor); `call`: the call it answers.
    func record(_ decision: Decision, call: VarlinkRequest?)
}

/// The shell of Background App Refresh (SPEC §5, §6, §7): decodes the refresh calls, feeds the
/// ``RefreshMachine`` (which decides everything), and performs its actions: feeds the lifecycle core,
/// journals, answers, saves the state (``StateStore``: a change is answered once it is durable) and keeps
/// the daemon's one wall-clock timer. Runs on the daemon's queue.
final class RefreshController: @unchecked Sendable {
    // @unchecked: used only on the daemon's queue.
    private(set) weak var host: (any RefreshHost)?
    private let queue: DispatchQueue
    private let logger: Logger
    let clock: DaemonClock
    let store: StateStore
    private(set) var machine: RefreshMachine
    private var loadWarnings: [String]
    private var power: PowerSupplyMonitor?
    private var timer: (any DispatchSourceTimer)?

    static let statusNotification = "refresh-status-changed"

    init(
        host: any RefreshHost, queue: DispatchQueue, logger: Logger, clock: DaemonClock, config: LoadedConfiguration,
        stateDirectory: String, powerSupplyPath: String? = "/sys/class/power_supply"
    ) {
        self.host = host
        self.queue = queue
        self.logger = logger
        self.clock = clock
        store = StateStore(directory: stateDirectory, queue: queue)
        machine = RefreshMachine(config: Self.refreshConfig(config))
        let loaded = store.load()
        loadWarnings = loaded.warnings
        if let powerSupplyPath {
            power = PowerSupplyMonitor(path: powerSupplyPath, queue: queue) { [weak self] onPower in
                self?.powerDetected(onPower)
            }
        }
        feed(.stateLoaded(loaded.state))
        // The service is still being built (apps not registered yet): start on the next turn of the queue.
        queue.async { [weak self] in self?.start() }
    }

    /// The machine's view of the configuration.
    static func refreshConfig(_ config: LoadedConfiguration) -> RefreshConfig {
        let d = config.daemon
        var apps: [AppID: RefreshConfig.App] = [:]
        for (id, m) in config.manifests {
            apps[id] = RefreshConfig.App(
                permittedIdentifiers: Set(m.permittedTaskIdentifiers),
                backgroundModes: Set(m.backgroundModes.compactMap { BackgroundMode(rawValue: $0.rawValue) }),
                setting: m.backgroundAppRefresh, restricted: m.refreshRestricted)
        }
        return RefreshConfig(
            mode: RefreshMode(rawValue: d.backgroundAppRefresh.rawValue) ?? .on, defaultAppRefresh: d.defaultAppRefresh,
            minimumRefreshInterval: .microseconds(d.minimumRefreshIntervalUSec), processingIdle: .microseconds(d.processingIdleUSec),
            apps: apps, energy: energyPolicy(d.energy))
    }

    private func start() {
        for w in loadWarnings { logger.warning("refresh state: \(w)") }
        loadWarnings = []
        let detected = power?.start()
        if let detected {
            logger.info("external power \(detected ? "connected" : "not connected") (\(power?.path ?? ""), following changes by \(power?.mode ?? "none"))")
        }
        feed(.started(detectedPower: detected))
    }

    // MARK: - Reading

    var mode: RefreshMode { machine.mode }
    var network: NetworkCondition { machine.network }
    func setting(for app: AppID) -> Bool { machine.setting(for: app) }
    /// restricted (admin), denied (app off, global off, low power mode), available.
    func status(for app: AppID) -> String { machine.status(for: app).rawValue }
    /// Why the app may not be launched or woken now (nil: it may).
    func denial(_ app: AppID) -> Reason? { machine.denial(app) }
    func pendingCount(for app: AppID) -> Int { machine.pendingCount(for: app) }
    var plans: Int { machine.plans }

    /// The Background App Refresh values in force (`GetSettings`): the global mode, Low Power Mode and the
    /// conditions, as set at run time or detected.
    var policyInForce: (mode: RefreshMode, lowPowerMode: Bool, onExternalPower: Bool, network: NetworkCondition) {
        (machine.mode, machine.state.lowPowerMode, machine.onExternalPower, machine.network)
    }

    // MARK: - Inputs from the daemon

    /// SIGHUP / Reload: manifests may restrict, unrestrict, add or remove apps.
    func configurationChanged(_ config: LoadedConfiguration) {
        feed(.configurationChanged(Self.refreshConfig(config)))
    }

    /// Every decision the service records passes here (the idle rule, requests waiting on an app's state).
    func observe(_ d: Decision) {
        guard let app = d.app, let appState = d.state else { return }
        feed(.appStateObserved(app, appState))
        // SPEC §16: a launch into, or a move to, the foreground is the user's use of the app.
        if d.kind == .launch || d.kind == .foreground, appState.isForeground { feed(.usedByUser(app)) }
    }

    private func powerDetected(_ onPower: Bool) {
        let before = machine.onExternalPower
        feed(.powerDetected(onPower))
        if machine.onExternalPower != before {
            logger.info("external power \(onPower ? "connected" : "disconnected") (\(power?.path ?? ""))")
        }
    }

    /// The lifecycle core started a scheduled task: a request that waited for the background leaves the
    /// pending list (and the state file) now.
    func taskStarted(_ app: AppID, identifier: String) {
        feed(.taskStarted(app, identifier: identifier))
    }

    /// The wall-clock timer fired (tests call it by hand).
    func wallDeadlineReached() { feed(.wallDeadlineReached) }

    // MARK: - Driving the machine

    /// Feeds one input (for `call`, if it comes from one) and performs the machine's actions in order.
    func feed(_ input: RefreshInput, call: VarlinkRequest? = nil, payload: Payload? = nil) {
        // A non-escaping closure: no allocation per input (every decision the service records is one).
        let actions = machine.handle(input, now: clock.both(), facts: { self.host?.refreshFacts($0) })
        for action in actions { perform(action, call: call, payload: payload) }
    }

    private func perform(_ action: RefreshAction, call: VarlinkRequest?, payload: Payload?) {
        switch action {
        case .run(let run):
            let input = Input.taskRunRequested(run.app, identifier: run.identifier, kind: run.kind, reason: run.reason)
            guard run.answersCall, let call else {
                host?.feed(input)
                return
            }
            guard run.saveBeforeReply else {
                host?.run(input, for: call, answer: nil)
                return
            }
            host?.run(input, for: call, answer: { [weak self] reply in
                guard let self else { return reply() }
                // The latest state (as `.save` does), never a copy taken earlier: a copy saved after a newer
                // state would take the file back. A failed save is said, not answered as done.
                self.store.save(self.machine.state) { [weak self] error in
                    self?.saveFailed(error)
                    if error != nil {
                        Self.send(.failure(.unavailable(RefreshCallError.stateNotSaved)), to: call)
                    } else {
                        reply()
                    }
                }
            })
        case .wake(let app):
            let input = Input.remoteNotificationReceived(app, payload: payload)
            if let call { host?.run(input, for: call, answer: nil) } else { host?.feed(input) }
        case .announceStatus(let app, let status, let previous):
            let json = JSON.object(["status": .string(status.rawValue), "previousStatus": .string(previous.rawValue)])
            host?.feed(.notificationPosted(name: Self.statusNotification, app: app, payload: Payload(json: json.serialized())))
        case .record(let notice):
            host?.record(RefreshMessages.decision(notice), call: notice.byCall ? call : nil)
        case .save(_, let reply):
            // The latest state, not the action's copy: a change made meanwhile (a task that started while
            // these actions were performed) is never overwritten by an older one.
            store.save(machine.state) { [weak self] error in
                self?.saveFailed(error)
                guard let reply, let call else { return }
                if error != nil {
                    Self.send(.failure(.unavailable(RefreshCallError.stateNotSaved)), to: call)
                } else {
                    Self.send(reply, to: call)
                }
            }
        case .reply(let reply):
            if let call { Self.send(reply, to: call) }
        case .armWallTimer(let wake):
            arm(wake)
        case .reviewSoon:
            queue.async { [weak self] in self?.feed(.reviewRequested) }
        case .cancelWaiting(let app, let identifier):
            host?.feed(.waitingTaskCancelled(app, identifier: identifier))
        }
    }

    private static func send(_ reply: RefreshReply, to request: VarlinkRequest) {
        switch reply {
        case .ok:
            request.reply()
        case .failure(let failure):
            request.fail(wireError(failure, manager: ManagerMethod(request.call) != nil))
        }
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

    /// The daemon's one wall-clock timer.
    private func arm(_ wake: RealtimeInstant?) {
        if timer == nil {
            let t = DispatchSource.makeTimerSource(queue: queue)
            t.setEventHandler { [weak self] in self?.wallDeadlineReached() }
            t.schedule(wallDeadline: .distantFuture)
            t.resume()
            timer = t
        }
        guard let wake else {
            timer?.schedule(wallDeadline: .distantFuture)
            return
        }
        let us = wake.microsecondsSinceEpoch
        let spec = timespec(tv_sec: Int(us / 1_000_000), tv_nsec: Int(us % 1_000_000) * 1_000)
        timer?.schedule(wallDeadline: DispatchWallTime(timespec: spec), leeway: .milliseconds(5))
    }

    func stop() {
        timer?.cancel()
        timer = nil
        power?.stop()
    }

    private func saveFailed(_ error: String?) {
        if let error { logger.error("could not save the refresh state: \(error)") }
    }
}
