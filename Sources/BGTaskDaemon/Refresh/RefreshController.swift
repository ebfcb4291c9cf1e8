import BGTaskConfig
import BGTaskCore
import BGTaskProtocol
import Dispatch
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Background App Refresh (SPEC §5, §6, §7) in the daemon: per-app and global policy, Low Power Mode,
/// conditions, scheduled task requests, persisted in the state directory. Runs on the daemon's queue.
///
/// The decisions are pure (``RefreshPolicy``, ``TaskSchedule`` in BGTaskCore); this shell reads the clocks,
/// keeps the one wall-clock timer armed for the earliest date at which a waiting request may become due,
/// and re-plans when the policy, the conditions or (for requests that wait on them) the apps' states change.
/// Running a task is the lifecycle core's job: it is fed `taskRunRequested` and launches or resumes the app.
///
/// Every change a client makes is answered only once the state file that holds it is durable (``StateStore``).
final class RefreshController: @unchecked Sendable {
    // @unchecked: used only on the daemon's queue.
    unowned let service: DaemonService
    let stateDirectory: String
    let store: StateStore
    /// The persisted state; changed only on the queue, saved after every change.
    private(set) var state: RefreshState
    private var loadWarnings: [String]

    /// Power as last set (SetConditions) or detected (/sys/class/power_supply), whichever came last.
    private var onExternalPower: Bool
    private var power: PowerSupplyMonitor?
    /// Each app's status as last announced, to notice changes.
    private var statuses: [AppID: RefreshStatus] = [:]
    /// Due requests whose denial was journaled, and why: each denial is journaled once, not at every look.
    private var deniedNotices: [AppID: [String: Reason]] = [:]
    /// Apps in the foreground (active or inactive), from the decisions' states, and when the last one left.
    private var foregroundApps: Set<AppID> = []
    private var foregroundEnded: Instant
    /// Some request waits on the apps' states (idle rule, an app being terminated): re-plan when they change.
    private var watchLifecycle = false
    private var planQueued = false
    private var timer: (any DispatchSourceTimer)?
    private var armedWake: RealtimeInstant?
    /// Plans made (for tests and figures).
    private(set) var plans = 0

    static let statusNotification = "refresh-status-changed"

    init(service: DaemonService, stateDirectory: String, powerSupplyPath: String = "/sys/class/power_supply") {
        self.service = service
        self.stateDirectory = stateDirectory
        store = StateStore(directory: stateDirectory, queue: service.queue)
        let loaded = store.load()
        state = loaded.state
        loadWarnings = loaded.warnings
        onExternalPower = loaded.state.onExternalPower ?? true
        foregroundEnded = service.now()
        power = PowerSupplyMonitor(path: powerSupplyPath, queue: service.queue) { [weak self] onPower in
            self?.powerDetected(onPower)
        }
        // The service is still being built (apps not registered yet): start on the next turn of the queue.
        service.queue.async { [weak self] in self?.start() }
    }

    private func start() {
        for w in loadWarnings { service.logger.warning("refresh state: \(w)") }
        loadWarnings = []
        if let detected = power?.start() {
            onExternalPower = detected
            service.logger.info("external power \(detected ? "connected" : "not connected") (\(power?.path ?? ""), following changes by \(power?.mode ?? "none"))")
        }
        for app in service.config.manifests.keys { statuses[app] = policyStatus(app) }
        plan()
    }

    // MARK: - Policy (SPEC §5)

    var mode: RefreshMode {
        state.mode ?? RefreshMode(rawValue: service.config.daemon.backgroundAppRefresh.rawValue) ?? .on
    }

    var network: NetworkCondition { state.network ?? .unmetered }

    var conditions: RefreshConditions { RefreshConditions(onExternalPower: onExternalPower, network: network) }

    var policy: RefreshPolicy { RefreshPolicy(mode: mode, lowPowerMode: state.lowPowerMode, network: network) }

    /// The app's own setting: a run-time change, else manifest `BackgroundAppRefresh=`, else `DefaultAppRefresh=`.
    func setting(for app: AppID) -> Bool {
        RefreshPolicy.appSetting(
            runTime: state.appSettings[app], manifest: service.config.manifests[app]?.backgroundAppRefresh,
            defaultSetting: service.config.daemon.defaultAppRefresh)
    }

    func restricted(_ app: AppID) -> Bool { service.config.manifests[app]?.refreshRestricted ?? false }

    func policyStatus(_ app: AppID) -> RefreshStatus {
        policy.status(enabled: setting(for: app), restricted: restricted(app))
    }

    /// restricted (admin), denied (app off, global off, low power mode), available.
    func status(for app: AppID) -> String { policyStatus(app).rawValue }

    /// Why the app may not be launched or woken now (nil: it may).
    func denial(_ app: AppID) -> Reason? { policy.denial(enabled: setting(for: app), restricted: restricted(app)) }

    /// Why `SubmitTaskRequest` is `Unavailable` (the status is not `available`).
    /// A metered network does not refuse a submission: the request waits for an unmetered one.
    func unavailability(_ app: AppID) -> Reason? {
        guard policyStatus(app) != .available, let reason = denial(app), reason != .networkMetered else { return nil }
        return reason
    }

    func pendingCount(for app: AppID) -> Int { state.schedule.count(for: app) }

    /// Adjusts `GetSettings` with the run-time state (global mode, low power, conditions).
    func overrideSettings(_ settings: inout [String: JSON]) {
        settings["backgroundAppRefresh"] = .string(mode.rawValue)
        settings["lowPowerMode"] = .bool(state.lowPowerMode)
        settings["onExternalPower"] = .bool(onExternalPower)
        settings["network"] = .string(network.rawValue)
    }

    /// Announces status changes: `refresh-status-changed` to each running app whose status changed.
    private func announceStatusChanges() {
        for app in service.config.manifests.keys.sorted() {
            let now = policyStatus(app)
            let before = statuses.updateValue(now, forKey: app)
            guard let before, before != now else { continue }
            guard let snap = service.lifecycle.app(app, now: service.now()), snap.lifecycleAware,
                snap.state != .notRunning
            else { continue }
            let payload = Payload(json: JSON.object(["status": .string(now.rawValue), "previousStatus": .string(before.rawValue)]).serialized())
            service.feed(.notificationPosted(name: Self.statusNotification, app: app, payload: payload))
        }
    }

    /// SIGHUP / Reload: manifests may restrict, unrestrict, add or remove apps.
    func configurationChanged() {
        for app in statuses.keys where service.config.manifests[app] == nil { statuses[app] = nil }
        announceStatusChanges()
        plan()
    }

    // MARK: - Lifecycle observation

    /// Every decision the service records passes here: the apps' states feed the idle rule, and requests
    /// that wait on an app's state are looked at again (on the next turn of the queue, once per turn).
    func observe(_ d: Decision) {
        guard let app = d.app, let appState = d.state else { return }
        if appState.isForeground {
            foregroundApps.insert(app)
        } else if foregroundApps.remove(app) != nil, foregroundApps.isEmpty {
            foregroundEnded = service.now()
        }
        if watchLifecycle { planSoon() }
    }

    private func planSoon() {
        guard !planQueued else { return }
        planQueued = true
        service.queue.async { [weak self] in
            guard let self else { return }
            self.planQueued = false
            self.plan()
        }
    }

    // MARK: - Scheduling (SPEC §6)

    func wallClock() -> RealtimeInstant { RealtimeInstant(microsecondsSinceEpoch: Monotonic.realtimeUSec()) }

    func context() -> TaskSchedulingContext {
        let d = service.config.daemon
        return TaskSchedulingContext(
            now: wallClock(), conditions: conditions, minimumRefreshInterval: .microseconds(d.minimumRefreshIntervalUSec),
            processingIdle: .microseconds(d.processingIdleUSec),
            idleFor: foregroundApps.isEmpty ? service.now() - foregroundEnded : nil)
    }

    /// Runs what is due, journals what is due but denied, arms the timer for the next date.
    func plan() {
        plans += 1
        let ctx = context()
        let manifests = service.config.manifests
        let plan = state.schedule.plan(context: ctx) { [self] app in denial(app) }
        var watch = plan.waitsForIdle
        var changed = false
        let monotonic = service.now()
        for run in plan.runs {
            let app = run.app, request = run.request
            // An app whose manifest is gone keeps its requests for when it comes back.
            guard manifests[app] != nil, let snap = service.lifecycle.app(app, now: monotonic) else { continue }
            if snap.terminating || snap.runningTasks.contains(where: { $0.identifier == request.identifier }) {
                watch = true
                continue
            }
            state.schedule.started(request.identifier, for: app, at: ctx.now)
            changed = true
            service.feed(.taskRunRequested(app, identifier: request.identifier, kind: request.kind, reason: .taskScheduled))
        }
        var notices: [AppID: [String: Reason]] = [:]
        for denial in plan.denials where manifests[denial.task.app] != nil {
            let app = denial.task.app, request = denial.task.request
            notices[app, default: [:]][request.identifier] = denial.reason
            guard deniedNotices[app]?[request.identifier] != denial.reason else { continue }
            service.record(
                Decision(
                    kind: .deny, reason: denial.reason, app: app, state: service.lifecycle.app(app, now: monotonic)?.state,
                    taskName: request.identifier, severity: .notice,
                    message: "did not run \(request.kind.rawValue) task \(request.identifier) of \(app): \(Self.explain(denial.reason))"),
                peer: nil)
        }
        deniedNotices = notices
        watchLifecycle = watch
        if changed { store.save(state) { [weak self] error in self?.saveFailed(error) } }
        arm(plan.nextWake)
    }

    static func explain(_ reason: Reason) -> String {
        switch reason {
        case .restricted: return "its Background App Refresh is restricted by the administrator"
        case .refreshDisabled: return "Background App Refresh is off"
        case .lowPowerMode: return "Low Power Mode is on"
        case .networkMetered: return "the network is metered and Background App Refresh is allowed only on unmetered networks"
        default: return reason.rawValue
        }
    }

    private func arm(_ wake: RealtimeInstant?) {
        guard wake != armedWake else { return }
        armedWake = wake
        if timer == nil {
            let t = DispatchSource.makeTimerSource(queue: service.queue)
            t.setEventHandler { [weak self] in
                guard let self else { return }
                self.armedWake = nil
                self.plan()
            }
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

    private func saveFailed(_ error: String?) {
        if let error { service.logger.error("could not save the refresh state: \(error)") }
    }

    private func powerDetected(_ onPower: Bool) {
        guard onPower != onExternalPower else { return }
        onExternalPower = onPower
        service.logger.info("external power \(onPower ? "connected" : "disconnected") (\(power?.path ?? ""))")
        plan()
    }

    // MARK: - Requests

    /// Saves the state and answers `request` once it is durable.
    private func commit(_ request: VarlinkRequest, prefix: String, _ reply: [String: JSON] = [:]) {
        store.save(state) { [weak self] error in
            if let error {
                self?.saveFailed(error)
                request.fail(VarlinkError(prefix + ".Unavailable", ["reason": .string("state-not-saved")]))
            } else {
                request.reply(reply)
            }
        }
    }

    /// io.bgtaskd.App methods not handled by the service; false: not one of ours.
    func handleApp(_ request: VarlinkRequest, app: AppID) -> Bool {
        let prefix = Interfaces.appName
        let p = request.call.parameters
        switch request.call.methodName {
        case "SubmitTaskRequest":
            guard let identifier = p["identifier"]?.stringValue, !identifier.isEmpty else {
                request.fail(.invalidParameter("identifier"))
                return true
            }
            guard let kind = p["kind"]?.stringValue.flatMap(TaskKind.init(rawValue:)) else {
                request.fail(.invalidParameter("kind"))
                return true
            }
            var begin: RealtimeInstant?
            if let raw = p["earliestBeginUSec"], raw != .null {
                guard let us = raw.intValue, us >= 0 else {
                    request.fail(.invalidParameter("earliestBeginUSec"))
                    return true
                }
                begin = RealtimeInstant(microsecondsSinceEpoch: us)
            }
            guard let network = optionalBool(p["requiresNetwork"]) else {
                request.fail(.invalidParameter("requiresNetwork"))
                return true
            }
            guard let power = optionalBool(p["requiresExternalPower"]) else {
                request.fail(.invalidParameter("requiresExternalPower"))
                return true
            }
            submit(
                TaskRequest(
                    identifier: identifier, kind: kind, earliestBegin: begin, requiresNetwork: network ?? false,
                    requiresExternalPower: power ?? false),
                app: app, request: request)
        case "CancelTaskRequest":
            guard let identifier = p["identifier"]?.stringValue else {
                request.fail(.invalidParameter("identifier"))
                return true
            }
            state.schedule.cancel(identifier, for: app)
            deniedNotices[app]?[identifier] = nil
            commit(request, prefix: prefix)
            plan()
        case "CancelAllTaskRequests":
            state.schedule.cancelAll(for: app)
            deniedNotices[app] = nil
            commit(request, prefix: prefix)
            plan()
        case "PendingTaskRequests":
            request.reply(["requests": .array(state.schedule.requests(for: app).map(RefreshState.requestJSON))])
        case "CompleteTask":
            guard let identifier = p["identifier"]?.stringValue else {
                request.fail(.invalidParameter("identifier"))
                return true
            }
            guard let success = p["success"]?.boolValue else {
                request.fail(.invalidParameter("success"))
                return true
            }
            service.run(.taskCompleted(app, identifier: identifier, success: success), for: request)
        default:
            return false
        }
        return true
    }

    /// `nil`: invalid; `.some(nil)`: absent or null.
    private func optionalBool(_ value: JSON?) -> Bool?? {
        guard let value, value != .null else { return .some(nil) }
        guard let b = value.boolValue else { return nil }
        return .some(b)
    }

    private func submit(_ task: TaskRequest, app: AppID, request: VarlinkRequest) {
        let prefix = Interfaces.appName
        guard let manifest = service.config.manifests[app] else {
            return request.fail(VarlinkError(prefix + ".NoSuchApp", ["appId": .string(app.rawValue)]))
        }
        let permissions = TaskSubmitPermissions(
            permittedIdentifiers: Set(manifest.permittedTaskIdentifiers),
            backgroundModes: Set(manifest.backgroundModes.compactMap { BackgroundMode(rawValue: $0.rawValue) }),
            unavailable: unavailability(app))
        switch state.schedule.submit(task, for: app, permissions: permissions) {
        case .success:
            deniedNotices[app]?[task.identifier] = nil
            commit(request, prefix: prefix)
            plan()
        case .failure(let error):
            let snapState = service.lifecycle.app(app, now: service.now())?.state
            switch error {
            case .notPermitted(let identifier):
                request.fail(VarlinkError(prefix + ".NotPermitted", ["identifier": .string(identifier)]))
            case .modeNotDeclared(let mode):
                service.record(
                    Decision(
                        kind: .deny, reason: .modeNotDeclared, app: app, state: snapState, taskName: task.identifier,
                        severity: .notice,
                        message: "refused \(task.kind.rawValue) task request \(task.identifier) of \(app): its manifest does not declare \(mode.rawValue)"),
                    peer: request.peer)
                request.fail(VarlinkError(prefix + ".ModeNotDeclared", ["mode": .string(mode.rawValue)]))
            case .unavailable(let reason):
                service.record(
                    Decision(
                        kind: .deny, reason: reason, app: app, state: snapState, taskName: task.identifier, severity: .notice,
                        message: "refused \(task.kind.rawValue) task request \(task.identifier) of \(app): \(Self.explain(reason))"),
                    peer: request.peer)
                request.fail(VarlinkError(prefix + ".Unavailable", ["reason": .string(reason.rawValue)]))
            case .tooManyPendingTaskRequests(let kind):
                request.fail(VarlinkError(prefix + ".TooManyPendingTaskRequests", ["kind": .string(kind.rawValue)]))
            }
        }
    }

    /// io.bgtaskd.Manager methods not handled by the service; false: not one of ours. The service has
    /// already refused control methods to callers that may not control (root or `ControlGroup=`).
    func handleManager(_ request: VarlinkRequest) -> Bool {
        let prefix = Interfaces.managerName
        let p = request.call.parameters
        switch request.call.methodName {
        case "SetRefreshPolicy":
            guard let app = service.appParameter(request, prefix: prefix) else { return true }
            guard let enabled = p["enabled"]?.boolValue else {
                request.fail(.invalidParameter("enabled"))
                return true
            }
            setRefreshPolicy(app, enabled: enabled, request: request)
        case "SetGlobalRefresh":
            guard let mode = p["mode"]?.stringValue.flatMap(RefreshMode.init(rawValue:)) else {
                request.fail(.invalidParameter("mode"))
                return true
            }
            state.mode = mode
            recordPolicy(nil, request, "Background App Refresh set to \(mode.rawValue) for every app")
            changedPolicy(request)
        case "SetLowPowerMode":
            guard let enabled = p["enabled"]?.boolValue else {
                request.fail(.invalidParameter("enabled"))
                return true
            }
            state.lowPowerMode = enabled
            recordPolicy(
                nil, request,
                enabled ? "Low Power Mode on: Background App Refresh is denied to every app" : "Low Power Mode off")
            changedPolicy(request)
        case "SetConditions":
            guard let power = optionalBool(p["onExternalPower"]) else {
                request.fail(.invalidParameter("onExternalPower"))
                return true
            }
            var network: NetworkCondition?
            if let raw = p["network"], raw != .null {
                guard let n = raw.stringValue.flatMap(NetworkCondition.init(rawValue:)) else {
                    request.fail(.invalidParameter("network"))
                    return true
                }
                network = n
            }
            if let power {
                state.onExternalPower = power
                onExternalPower = power
            }
            if let network { state.network = network }
            recordPolicy(
                nil, request,
                "conditions: \(onExternalPower ? "on external power" : "on battery"), network \(self.network.rawValue)")
            changedPolicy(request)
        case "WakeForRemoteNotification":
            guard let app = service.appParameter(request, prefix: prefix) else { return true }
            var payload: Payload?
            if let raw = p["payload"], raw != .null {
                guard raw.objectValue != nil else {
                    request.fail(.invalidParameter("payload"))
                    return true
                }
                payload = Payload(json: raw.serialized())
            }
            wake(app, payload: payload, request: request)
        case "RunTaskNow":
            guard let app = service.appParameter(request, prefix: prefix) else { return true }
            guard let identifier = p["identifier"]?.stringValue, !identifier.isEmpty else {
                request.fail(.invalidParameter("identifier"))
                return true
            }
            runNow(app, identifier: identifier, request: request)
        default:
            return false
        }
        return true
    }

    private func recordPolicy(_ app: AppID?, _ request: VarlinkRequest, _ message: String) {
        let snapState = app.flatMap { service.lifecycle.app($0, now: service.now())?.state }
        service.record(Decision(kind: .policy, reason: .userRequest, app: app, state: snapState, message: message), peer: request.peer)
    }

    /// After a policy change: announce status changes, re-plan, answer once saved.
    private func changedPolicy(_ request: VarlinkRequest) {
        announceStatusChanges()
        commit(request, prefix: Interfaces.managerName)
        plan()
    }

    private func setRefreshPolicy(_ app: AppID, enabled: Bool, request: VarlinkRequest) {
        if enabled && restricted(app) {
            service.record(
                Decision(
                    kind: .deny, reason: .restricted, app: app, state: service.lifecycle.app(app, now: service.now())?.state,
                    severity: .notice,
                    message: "did not turn Background App Refresh on for \(app): the administrator restricted it (RefreshRestricted=yes)"),
                peer: request.peer)
            return request.fail(VarlinkError(Interfaces.managerName + ".Unavailable", ["reason": .string(Reason.restricted.rawValue)]))
        }
        state.appSettings[app] = enabled
        recordPolicy(
            app, request,
            "Background App Refresh turned \(enabled ? "on" : "off") for \(app) (refresh status: \(status(for: app)))")
        changedPolicy(request)
    }

    private func deny(_ app: AppID, _ reason: Reason, _ what: String, request: VarlinkRequest) {
        service.record(
            Decision(
                kind: .deny, reason: reason, app: app, state: service.lifecycle.app(app, now: service.now())?.state,
                severity: .notice, message: "\(what): \(Self.explain(reason))"),
            peer: request.peer)
        request.fail(VarlinkError(Interfaces.managerName + ".Unavailable", ["reason": .string(reason.rawValue)]))
    }

    private func wake(_ app: AppID, payload: Payload?, request: VarlinkRequest) {
        let modes = service.config.manifests[app]?.backgroundModes ?? []
        guard modes.contains(.remoteNotification) else {
            service.record(
                Decision(
                    kind: .deny, reason: .modeNotDeclared, app: app, state: service.lifecycle.app(app, now: service.now())?.state,
                    severity: .notice,
                    message: "did not wake \(app) for a remote notification: its manifest does not declare remote-notification"),
                peer: request.peer)
            return request.fail(
                VarlinkError(Interfaces.managerName + ".ModeNotDeclared", ["mode": .string(BackgroundMode.remoteNotification.rawValue)]))
        }
        if let reason = denial(app) {
            return deny(app, reason, "did not wake \(app) for a remote notification", request: request)
        }
        service.run(.remoteNotificationReceived(app, payload: payload), for: request)
    }

    /// `RunTaskNow`: a pending request at once, bypassing its date and conditions but not the policy.
    private func runNow(_ app: AppID, identifier: String, request: VarlinkRequest) {
        let prefix = Interfaces.managerName
        guard service.config.manifests[app]?.permittedTaskIdentifiers.contains(identifier) == true else {
            return request.fail(VarlinkError(prefix + ".NotPermitted", ["identifier": .string(identifier)]))
        }
        guard let pending = state.schedule.requests(for: app).first(where: { $0.identifier == identifier }) else {
            return request.fail(VarlinkError(prefix + ".Unavailable", ["reason": .string("no-pending-request")]))
        }
        if let reason = denial(app) {
            return deny(app, reason, "did not run \(pending.kind.rawValue) task \(identifier) of \(app)", request: request)
        }
        let input = Input.taskRunRequested(app, identifier: identifier, kind: pending.kind, reason: .userRequest)
        // Leave the request pending if the core will refuse (its reply says why).
        if let snap = service.lifecycle.app(app, now: service.now()),
            snap.lifecycleAware, !snap.terminating, !snap.runningTasks.contains(where: { $0.identifier == identifier })
        {
            state.schedule.started(identifier, for: app, at: wallClock())
            deniedNotices[app]?[identifier] = nil
            // The request leaves the pending list: answer only once the file says so too (issue 11).
            let snapshot = state
            service.run(input, for: request, answer: { [weak self] reply in
                guard let self else { return reply() }
                self.store.save(snapshot) { [weak self] error in
                    self?.saveFailed(error)
                    reply()
                }
            })
            plan()
        } else {
            service.run(input, for: request)
        }
    }
}
