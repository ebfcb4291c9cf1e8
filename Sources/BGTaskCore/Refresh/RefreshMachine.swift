/// Background App Refresh and scheduled tasks (SPEC §5, §6) as a pure state machine: the policy, the
/// conditions, each app's pending task requests and what is due when. Every input returns the actions the
/// shell performs in order (run, deny, answer, save, arm the wall-clock timer); the state changes first.
///
/// No clock, no I/O: the shell passes both clocks (``RefreshNow``) and a read-only view of the lifecycle
/// core (`facts`: the app's state, whether it runs the task already). Deadlines are wall-clock instants
/// (``nextWallDeadline``); an early or late ``RefreshInput/wallDeadlineReached`` is harmless.
///
/// The decisions are made by ``RefreshPolicy`` (may the app be woken) and ``TaskSchedule`` (what is due);
/// this machine strings them together: calls in `+Calls`, planning in `+Plan`.
public struct RefreshMachine: Sendable, Codable {
    /// The lifecycle core's view of one app (`nil`: not registered).
    public typealias Facts = (AppID) -> RefreshAppFacts?

    /// The persisted state; every change the machine makes is followed by a ``RefreshAction/save(_:reply:)``.
    public internal(set) var state = RefreshState()
    /// The configuration in force.
    public internal(set) var config: RefreshConfig
    /// Power as last set (`SetConditions`) or detected, whichever came last.
    public internal(set) var onExternalPower = true
    /// The instant the wall-clock timer was last asked to fire at.
    public internal(set) var nextWallDeadline: RealtimeInstant?
    /// Plans made (for tests and figures).
    public internal(set) var plans = 0

    /// Each app's status as last announced, to notice changes.
    var statuses: [AppID: RefreshStatus] = [:]
    /// Due requests whose denial was journaled, and why: each denial is journaled once, not at every look.
    var deniedNotices: [AppID: [String: Reason]] = [:]
    /// Apps in the foreground (active or inactive), and when the last one left.
    var foregroundApps: Set<AppID> = []
    var foregroundEnded: Instant?
    /// Some request waits on the apps' states (idle rule, an app being terminated): look again when they change.
    var watchLifecycle = false
    /// A ``RefreshAction/reviewSoon`` is out and its ``RefreshInput/reviewRequested`` not yet in.
    var reviewQueued = false
    /// Requests handed to the lifecycle core while their app was in the foreground: the core holds them
    /// until the app has entered the background, and they stay pending (and saved) until they start
    /// (``RefreshInput/taskStarted(_:identifier:)``). An app that ends first does not lose them (SPEC §6).
    var awaitingStart: [AppID: Set<String>] = [:]
    /// SPEC §16: each app's remote-notification tokens (`RemoteWakesPerHour=`).
    var wakeTokens: [AppID: WakeTokens] = [:]

    /// A machine with `config`, the default state until ``RefreshInput/stateLoaded(_:)``.
    public init(config: RefreshConfig) {
        self.config = config
    }

    // MARK: - Reading (GetSettings, GetApp, RefreshStatus, PendingTaskRequests)

    /// The global setting: `SetGlobalRefresh`, else `BackgroundAppRefresh=`.
    public var mode: RefreshMode { state.mode ?? config.mode }
    /// The network as last set.
    public var network: NetworkCondition { state.network ?? .unmetered }
    /// Power and network.
    public var conditions: RefreshConditions { RefreshConditions(onExternalPower: onExternalPower, network: network) }
    /// The policy in force.
    public var policy: RefreshPolicy { RefreshPolicy(mode: mode, lowPowerMode: state.lowPowerMode, network: network) }

    /// The app's own setting: a run-time change, else manifest `BackgroundAppRefresh=`, else `DefaultAppRefresh=`.
    public func setting(for app: AppID) -> Bool {
        RefreshPolicy.appSetting(
            runTime: state.appSettings[app], manifest: config.apps[app]?.setting, defaultSetting: config.defaultAppRefresh)
    }

    /// `RefreshRestricted=`.
    public func restricted(_ app: AppID) -> Bool { config.apps[app]?.restricted ?? false }

    /// restricted (admin), denied (app off, global off, low power mode), available.
    public func status(for app: AppID) -> RefreshStatus { status(for: app, config.apps[app]) }

    /// The same with the app's configuration at hand.
    private func status(for app: AppID, _ appConfig: RefreshConfig.App?) -> RefreshStatus {
        let enabled = RefreshPolicy.appSetting(
            runTime: state.appSettings[app], manifest: appConfig?.setting, defaultSetting: config.defaultAppRefresh)
        return policy.status(enabled: enabled, restricted: appConfig?.restricted ?? false)
    }

    /// Why the app may not be launched or woken now (`nil`: it may).
    public func denial(_ app: AppID) -> Reason? {
        policy.denial(enabled: setting(for: app), restricted: restricted(app))
    }

    /// Why `SubmitTaskRequest` is `Unavailable` (the status is not `available`). A metered network does
    /// not refuse a submission: the request waits for an unmetered one.
    public func unavailability(_ app: AppID) -> Reason? {
        guard status(for: app) != .available, let reason = denial(app), reason != .networkMetered else { return nil }
        return reason
    }

    /// The app's pending requests, in submission order.
    public func requests(for app: AppID) -> [TaskRequest] { state.schedule.requests(for: app) }

    /// How many requests the app has pending.
    public func pendingCount(for app: AppID) -> Int { state.schedule.count(for: app) }

    // MARK: - Inputs

    /// Takes one input at `now`; returns what the shell must do, in order.
    public mutating func handle(_ input: RefreshInput, now: RefreshNow, facts: Facts) -> [RefreshAction] {
        switch input {
        case .stateLoaded(let loaded):
            state = loaded
            onExternalPower = loaded.onExternalPower ?? true
            if foregroundEnded == nil { foregroundEnded = now.monotonic }
            return []
        case .started(let detected):
            if let detected { onExternalPower = detected }
            // Each app's configuration read where it is (10,000 apps: no look-up of it, the table grown once).
            statuses.reserveCapacity(statuses.count + config.apps.count)
            for (app, appConfig) in config.apps { statuses[app] = status(for: app, appConfig) }
            return plan(now: now, facts: facts)
        case .configurationChanged(let newConfig):
            config = newConfig
            for app in statuses.keys where config.apps[app] == nil { statuses[app] = nil }
            return announceStatusChanges(facts) + plan(now: now, facts: facts)
        case .powerDetected(let onPower):
            guard onPower != onExternalPower else { return [] }
            onExternalPower = onPower
            return plan(now: now, facts: facts)
        case .appStateObserved(let app, let appState):
            var saved: [RefreshAction] = []
            if appState.isForeground {
                foregroundApps.insert(app)
            } else if foregroundApps.remove(app) != nil {
                // SPEC §16: used until now (its standby bucket counts from here; kept where buckets apply).
                state.energy.lastUsed[app] = now.wall
                if !config.energy.quotas.isEmpty { saved = [.save(state, reply: nil)] }
                if foregroundApps.isEmpty { foregroundEnded = now.monotonic }
            }
            // A task that waits for the app's background is looked at again when that app leaves the
            // foreground (ended first: it runs like any due request), not at every decision about any app.
            let awaited = !appState.isForeground && awaitingStart[app] != nil
            guard watchLifecycle || awaited, !reviewQueued else { return saved }
            reviewQueued = true
            return saved + [.reviewSoon]
        case .reviewRequested:
            reviewQueued = false
            return plan(now: now, facts: facts)
        case .taskStarted(let app, let identifier):
            // Only a request that waited for the background is still pending: others left at the hand-off.
            guard awaitingStart[app]?.remove(identifier) != nil else { return [] }
            if awaitingStart[app]?.isEmpty == true { awaitingStart[app] = nil }
            state.schedule.started(identifier, for: app, at: now.wall)
            deniedNotices[app]?[identifier] = nil
            return [.save(state, reply: nil)]
        case .wallDeadlineReached:
            nextWallDeadline = nil
            return plan(now: now, facts: facts)
        case .taskSubmitted(let app, let request):
            return submit(request, app: app, now: now, facts: facts)
        case .taskCancelled(let app, let identifier):
            state.schedule.cancel(identifier, for: app)
            deniedNotices[app]?[identifier] = nil
            let waiting = awaitingStart[app]?.remove(identifier) != nil
            if awaitingStart[app]?.isEmpty == true { awaitingStart[app] = nil }
            return (waiting ? [.cancelWaiting(app, identifier: identifier)] : [])
                + [.save(state, reply: .ok)] + plan(now: now, facts: facts)
        case .allTasksCancelled(let app):
            state.schedule.cancelAll(for: app)
            deniedNotices[app] = nil
            let waiting = (awaitingStart.removeValue(forKey: app) ?? []).sorted()
            return waiting.map { .cancelWaiting(app, identifier: $0) } + [.save(state, reply: .ok)]
                + plan(now: now, facts: facts)
        case .runNowRequested(let app, let identifier):
            return runNow(app, identifier: identifier, now: now, facts: facts)
        case .remoteNotificationRequested(let app):
            return wake(app, now: now, facts: facts)
        case .closedByUser(let app):
            return closedByUser(app)
        case .usedByUser(let app):
            return usedByUser(app, now: now, facts: facts)
        case .appSettingRequested(let app, let enabled):
            return setAppSetting(app, enabled: enabled, now: now, facts: facts)
        case .globalModeRequested(let mode):
            state.mode = mode
            return changedPolicy(.globalModeSet(mode), now: now, facts: facts)
        case .lowPowerModeRequested(let enabled):
            state.lowPowerMode = enabled
            return changedPolicy(.lowPowerModeSet(enabled), now: now, facts: facts)
        case .conditionsRequested(let power, let network):
            if let power {
                state.onExternalPower = power
                onExternalPower = power
            }
            if let network { state.network = network }
            return changedPolicy(
                .conditionsSet(onExternalPower: onExternalPower, network: self.network), now: now, facts: facts)
        }
    }

    /// After a global policy change: journal it, announce status changes, save and answer, re-plan.
    mutating func changedPolicy(_ subject: RefreshNotice.Subject, now: RefreshNow, facts: Facts) -> [RefreshAction] {
        let notice = RefreshNotice(kind: .policy, reason: .userRequest, app: nil, state: nil, subject: subject, byCall: true)
        return [.record(notice)] + announceStatusChanges(facts) + [.save(state, reply: .ok)] + plan(now: now, facts: facts)
    }

    /// `refresh-status-changed` to each running, checked-in app whose status changed.
    mutating func announceStatusChanges(_ facts: Facts) -> [RefreshAction] {
        var actions: [RefreshAction] = []
        for app in config.apps.keys.sorted() {
            let current = status(for: app)
            guard let before = statuses.updateValue(current, forKey: app), before != current else { continue }
            guard let f = facts(app), f.lifecycleAware, f.state != .notRunning else { continue }
            actions.append(.announceStatus(app, status: current, previous: before))
        }
        return actions
    }
}
