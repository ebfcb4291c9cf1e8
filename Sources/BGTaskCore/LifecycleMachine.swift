/// The deterministic state machine that takes every lifecycle decision (SPEC §2, §3, §4, §7, §8).
///
/// It never reads a clock and performs no I/O: the shell feeds it ``Input`` facts with the current monotonic
/// instant and performs the ``Action``s it returns, in order. The shell arms one timer for ``nextDeadline``
/// and feeds ``Input/deadlineReached`` when it fires.
///
/// Time rules:
/// - Every call first processes every deadline due at or before `now`, each at its own instant (so a late
///   timer or an input that overtakes it changes nothing), then the input. An early `deadlineReached` does nothing.
/// - `now` never goes backwards: an instant earlier than one already seen is treated as the latest one seen.
/// - A deadline takes effect exactly at its instant: at `deadline - 1µs` nothing happens.
///
/// Identical input sequences at identical instants give identical actions (no hashing order leaks out).
public struct LifecycleMachine: Sendable, Codable {
    /// The timings in force.
    public private(set) var config: LifecycleConfig

    var records: [AppRecord] = []
    var slots: [AppID: Int] = [:]
    var assertionTable = AssertionTable()
    var activityTable = ActivityTable()
    /// What each client connection holds: assertions, activities, an app's event stream.
    var connections = ConnectionTable()
    var pendingAcks: [EventID: AppID] = [:]
    var deadlines = DeadlineQueue<TimerKey>()
    var nextTaskNumber: UInt64 = 1
    private var nextEventNumber: UInt64 = 1
    /// The latest instant seen.
    private var clock: Instant = .zero
    /// The instant being processed: a deadline's own instant while it fires, else `clock`.
    private(set) var now: Instant = .zero
    private var out: [Action] = []
    var removals: Set<AppID> = []
    /// The request the input being handled carries: its reply names it.
    private var replyTo: RequestID?
    /// The request the input being handled carries (`nil`: a fact, or none given).
    var currentRequest: RequestID? { replyTo }
    /// Processes the shell reported spawned (`appLaunched`) that have not exited: the daemon's children.
    /// A stream closing on one that the core no longer runs gets it killed (never left unmanaged).
    var spawned: [Int32: AppID] = [:]
    /// Apps whose `.launch` the shell has not answered yet (`appLaunched` / `launchFailed`): an answer for
    /// one forgotten meanwhile still gets its process killed.
    var spawnsAwaited: Set<AppID> = []
    /// The daemon is stopping: ``Action/stopFinished(unexited:)`` is still to come.
    var stopping = false
    /// The `Hold` calls of live manager holds that have not been told of their app's termination yet.
    var holdRequests: [TaskID: RequestID] = [:]
    /// The memory-pressure episode under way (SPEC §8).
    var pressure = PressureEpisode()
    /// SPEC §14: the apps with live background work as last told (``Action/inhibitIdle(_:)``).
    /// Kept sorted (inserted in place), so that telling the set costs no sort per call.
    var idleApps: [AppID] = []
    /// The work of each of ``idleApps`` as last counted, and its sum: derived, so not encoded (`CodingKeys`),
    /// and counted again from the records when it does not match ``idleApps`` (a decoded machine).
    var idleWork = IdleWork()
    /// The apps that may have running tasks (SPEC §16's yield looks at these only): every app given a task
    /// since ``yieldProcessingTasks`` last dropped those that have none. Derived, so not encoded
    /// (`CodingKeys`): `nil` (a new or decoded machine) is counted from the records at the first yield.
    var appsGivenTasks: Set<AppID>?
    /// SPEC §15: the scene whose change is being handled; decisions taken meanwhile carry it (`BGTASKD_SCENE`).
    var decidingScene: SceneID?
    /// SPEC §16: the live continued tasks (each also an assertion of ``assertionTable``).
    var continuedTasks: [TaskID: ContinuedTask] = [:]

    /// Every stored property but ``idleWork`` and ``appsGivenTasks`` (derived from the records).
    enum CodingKeys: String, CodingKey {
        case config, records, slots, assertionTable, activityTable, connections, pendingAcks, deadlines, nextTaskNumber
        case nextEventNumber, clock, now, out, removals, replyTo, spawned, spawnsAwaited, stopping, holdRequests
        case pressure, idleApps, decidingScene, continuedTasks
    }

    /// A machine with no apps.
    public init(config: LifecycleConfig = .default) {
        self.config = config
    }

    /// The earliest pending deadline: arm a timer for it and feed ``Input/deadlineReached``. `nil`: none.
    public var nextDeadline: Instant? { deadlines.next }

    /// ``nextDeadline``, for a shell that keeps the machine in a class: a mutating access is made in
    /// place, where a read of the property from outside this module copies the whole machine (every
    /// table retained and released: issue 15's profile of the call path). Changes nothing.
    public mutating func peekNextDeadline() -> Instant? { deadlines.next }

    /// Applies one input at `now` and returns what the shell must do, in order.
    ///
    /// Requests produce exactly one ``Action/reply(_:to:)``, naming `request` (the shell's handle on the
    /// call the input came from); facts (`appRegistered`, `appUnregistered`, `configurationChanged`,
    /// `appLaunched`, `launchFailed`, `connectionClosed`, `processExited`, `deadlineReached`) produce none.
    public mutating func handle(_ input: Input, now: Instant, request: RequestID? = nil) -> [Action] {
        clock = Swift.max(clock, now)
        // Room for a call's usual actions (decision, reply, idle inhibition) at once: an array grown one
        // append at a time is allocated, then moved, two or three times per call.
        out = []
        out.reserveCapacity(4)
        fireDueDeadlines()
        replyTo = request
        let applied = out.count
        apply(input)
        replyTo = nil
        // SPEC §16: an app became active: processing tasks yield (LifecycleMachine+Energy.swift).
        if Self.someAppBecameActive(out[applied...]) {
            // Before the request's reply, which stays the last action.
            var reply: Action?
            if case .reply? = out.last { reply = out.removeLast() }
            yieldProcessingTasks()
            if let reply { out.append(reply) }
        }
        fireDueDeadlines()
        for app in removals.sorted() { forget(app) }
        removals = []
        if let change = idleInhibitionChange(after: out) {
            // Before the request's reply, which stays the last action (callers read it there).
            if case .reply? = out.last { out.insert(change, at: out.count - 1) } else { out.append(change) }
        }
        if stopping, appsStartedByDaemon.isEmpty {
            stopping = false
            deadlines.cancel(.stopLimit)
            out.append(.stopFinished(unexited: []))
        }
        let actions = out
        out = []
        return actions
    }

    // MARK: - Dispatch

    mutating func fireDueDeadlines() {
        while let due = deadlines.popDue(clock) {
            now = due.at
            fire(due.key)
        }
        now = clock
    }

    mutating func apply(_ input: Input) {
        switch input {
        case .appRegistered(let manifest): register(manifest)
        case .appsRegistered(let manifests): register(manifests)
        case .appUnregistered(let app): unregister(app)
        case .configurationChanged(let config): configurationChanged(config)
        case .launchRequested(let app, let background, let exclusive):
            launchRequested(app, background: background, exclusive: exclusive)
        case .appLaunched(let app, let pid): appLaunched(app, pid: pid)
        case .launchFailed(let app, let message): launchFailed(app, message: message)
        case .appCheckedIn(let app, let connection, let pid, let adopted):
            checkIn(app, connection: connection, pid: pid, inAdoptedCgroup: adopted)
        case .appCheckedInForScenes(let app, let connection, let pid, let adopted):
            checkIn(app, connection: connection, pid: pid, inAdoptedCgroup: adopted, scenes: true)
        case .sceneStateChanged(let app, let scene, let state, let title, let output, let reason):
            sceneStateChanged(app, scene, state, title: title, output: output, reason: reason)
        case .eventAcknowledged(let event, let caller): acknowledge(event, caller: caller)
        case .appCallReceived(let app, let method, let caller): appCallReceived(app, method: method, caller: caller)
        case .controlCallReceived(let caller, let groups): controlCallReceived(caller: caller, groups: groups)
        case .foregroundRequested(let app, let exclusive): foregroundRequested(app, exclusive: exclusive)
        case .backgroundRequested(let app): backgroundRequested(app)
        case .interruptionBegan(let app): interruptionBegan(app)
        case .interruptionEnded(let app): interruptionEnded(app)
        case .terminateRequested(let app): terminateRequested(app)
        case .assertionRequested(let app, let connection, let name):
            assertionRequested(app, connection: connection, name: name)
        case .assertionEndRequested(let app, let task): assertionEndRequested(app, task)
        case .holdRequested(let app, let connection, let name): holdRequested(app, connection: connection, name: name)
        case .stopRequested: stopRequested()
        case .activityRequested(let app, let connection, let mode):
            activityRequested(app, connection: connection, mode: mode)
        case .activityEndRequested(let app, let activity): activityEndRequested(app, activity)
        case .connectionClosed(let connection): connectionClosed(connection)
        case .processExited(let app, let pid): processExited(app, pid: pid)
        case .freezeConfirmed(let app): freezeConfirmed(app)
        case .taskRunRequested(let app, let identifier, let kind, let reason):
            taskRunRequested(app, identifier: identifier, kind: kind, reason: reason)
        case .taskCompleted(let app, let identifier, let success):
            taskCompleted(app, identifier: identifier, success: success)
        case .remoteNotificationReceived(let app, let payload): remoteNotificationReceived(app, payload: payload)
        case .notificationPosted(let name, let app, let payload): notificationPosted(name: name, app: app, payload: payload)
        case .memoryWarningRequested(let app): memoryWarningRequested(app)
        case .memoryReclaimRequested(let count): memoryReclaimRequested(count: count)
        case .memoryPressureTriggered(let window): memoryPressureTriggered(window: window)
        case .deadlineReached: break
        case .instanceAppeared(let app, let instance, let pid): instanceAppeared(app, instance, pid: pid)
        case .instanceVanished(let app, let instance): instanceVanished(app, instance)
        case .instanceReleased(let app, let instance): instanceReleased(app, instance)
        case .focusChanged(let app, let reason): focusChanged(app, reason: reason)
        case .waitingTaskCancelled(let app, let identifier): waitingTaskCancelled(app, identifier: identifier)
        case .busCallReceived(let app, let sender, let member): busCallReceived(app, sender: sender, member: member)
        case .systemSleepPreparing: systemSleepPreparing()
        case .systemResumed: systemResumed()
        case .locksObserved(let app, let seen): locksObserved(app, seen)
        case .freezeStalled(let app, let stalled): freezeStalled(app, stalled)
        case .freezeFailed(let app, let error): freezeFailed(app, error: error)
        case .thawedExternally(let app): thawedExternally(app)
        case .continuedTaskRequested(let app, let connection, let task):
            continuedTaskRequested(app, connection: connection, task)
        case .taskProgressReported(let app, let task, let progress): taskProgressReported(app, task, progress)
        case .continuedTaskCancelled(let app, let task): continuedTaskCancelled(app, task)
        }
    }

    mutating func fire(_ key: TimerKey) {
        switch key {
        case .launch(let app):
            guard let i = slots[app], records[i].termination == nil else { return }
            let r = records[i]
            if r.launch != nil {
                beginTermination(i, .launchTimeout, .noCheckIn(within: config.launchTimeout, again: false))
            } else if r.state != .notRunning, r.connection == nil {
                beginTermination(i, .launchTimeout, .noCheckIn(within: config.launchTimeout, again: true))
            }
        case .grace(let app):
            guard let i = slots[app], records[i].termination == nil, records[i].state == .background else { return }
            switch records[i].grace {
            case .awaitingAck:
                records[i].grace = .none
                beginTermination(
                    i, .didEnterBackgroundTimeout, .notAcknowledged(within: config.didEnterBackgroundTimeout))
            case .window:
                records[i].grace = .none
                maybeSuspend(i)
            case .none:
                break
            }
        case .budgetWarning(let app):
            guard let i = slots[app], records[i].termination == nil, records[i].state == .background else { return }
            for task in records[i].assertions where assertionTable[task].map({ !$0.managerHold && !$0.continued }) == true {
                warn(i, task)
            }
        case .budgetEnd(let app):
            guard let i = slots[app], records[i].termination == nil, records[i].state == .background else { return }
            // A manager hold has no time budget (SPEC §12): while one is live the budget's end terminates nothing.
            // SPEC §16: a continued task has no time budget either while it reports progress.
            let holds = records[i].assertions.filter { assertionTable[$0].map { $0.managerHold || $0.continued } == true }.count
            let live = records[i].assertions.count - holds
            if live > 0, holds == 0 {
                beginTermination(
                    i, .expirationNotHandled, .budgetEnded(live: live, budget: config.backgroundTimeBudget))
            }
        case .escalation(let app):
            guard let i = slots[app] else { return }
            escalate(i)
        case .taskWarning(let app, let identifier):
            guard let i = slots[app], records[i].termination == nil,
                let run = records[i].tasks[identifier], !run.warned
            else { return }
            records[i].tasks[identifier]?.warned = true
            deliver(i, .backgroundTaskWillExpire, identifier: identifier, deadline: run.deadline)
            record(
                .expire, .budgetEnding, i, taskName: identifier, remaining: nonNegative(run.deadline - now),
                .taskExpiring(run.kind, in: nonNegative(run.deadline - now)))
        case .taskEnd(let app, let identifier):
            guard let i = slots[app], records[i].termination == nil, records[i].tasks[identifier] != nil else { return }
            beginTermination(i, .taskNotCompleted, .taskNotCompleted(identifier: identifier))
        case .wakeEnd(let app):
            guard let i = slots[app], records[i].wake != nil else { return }
            endWake(i)
            maybeSuspend(i)
        case .lockRecheck(let app):
            if let i = slots[app] { lockRecheckDue(i) }
        case .lockDeferral(let app):
            if let i = slots[app] { lockDeferralDue(i) }
        case .freezeTimeout(let app):
            if let i = slots[app] { freezeTimeoutDue(i) }
        case .freezeRetry(let app):
            if let i = slots[app] { freezeRetryDue(i) }
        case .snapshot(let app):
            if let i = slots[app] { snapshotWaitEnded(i, timedOut: true) }
        case .continuedStall(let app, let task):
            if let i = slots[app] { continuedTaskStalled(i, task) }
        case .stopLimit:
            guard stopping else { return }
            stopping = false
            out.append(.stopFinished(unexited: appsStartedByDaemon))
        }
    }

    // MARK: - Helpers

    /// New timings: armed deadlines keep their instants, except the budgets of apps in the background, which
    /// follow the new `BackgroundTimeBudgetSec` and `ExpirationWarningSec` at once, so that what an app is
    /// told (`BackgroundTimeRemaining`) is when its budget ends.
    mutating func configurationChanged(_ config: LifecycleConfig) {
        let budgetChanged = config.backgroundTimeBudget != self.config.backgroundTimeBudget
            || config.expirationWarning != self.config.expirationWarning
        self.config = config
        guard budgetChanged else { return }
        for i in records.indices where records[i].state == .background && records[i].termination == nil {
            armBudget(i)
        }
    }

    mutating func cancelAllTimers(_ i: Int) {
        let app = records[i].id
        for key in [TimerKey.launch(app), .grace(app), .budgetWarning(app), .budgetEnd(app), .escalation(app), .wakeEnd(app),
                    .lockRecheck(app), .lockDeferral(app), .freezeTimeout(app), .freezeRetry(app)] {
            deadlines.cancel(key)
        }
        records[i].device = DeviceRecord()
        for identifier in records[i].tasks.keys {
            deadlines.cancel(.taskWarning(app, identifier))
            deadlines.cancel(.taskEnd(app, identifier))
        }
    }

    /// Sends an event on the app's stream. Lifecycle-unaware apps and apps without a stream get nothing (`nil`).
    @discardableResult
    mutating func deliver(
        _ i: Int, _ kind: LifecycleEventKind, needsAck: Bool = false, taskID: TaskID? = nil, taskName: String? = nil,
        identifier: String? = nil, name: String? = nil, payload: Payload? = nil, launchReason: LaunchReason? = nil,
        deadline: Instant? = nil, scene: SceneRef? = nil
    ) -> EventID? {
        guard records[i].manifest.lifecycleAware, let connection = records[i].connection else { return nil }
        let id = EventID(nextEventNumber)
        nextEventNumber += 1
        var event = Event(
            id: id, kind: kind, state: records[i].state, needsAck: needsAck, taskID: taskID, taskName: taskName,
            identifier: identifier, name: name, payload: payload, launchReason: launchReason, deadline: deadline)
        event.scene = scene
        out.append(.deliver(records[i].id, connection, event))
        return id
    }

    func decision(
        _ kind: DecisionKind, _ reason: Reason, _ i: Int, previous: AppState? = nil, taskID: TaskID? = nil,
        taskName: String? = nil, activityID: ActivityID? = nil, remaining: TimeSpan? = nil, severity: Severity = .info,
        _ detail: DecisionDetail
    ) -> Decision {
        var d = Decision(
            kind: kind, reason: reason, app: records[i].id, state: records[i].state, previousState: previous,
            taskID: taskID, taskName: taskName, activityID: activityID, remaining: remaining, pid: records[i].pid,
            severity: severity, detail: detail)
        d.scene = decidingScene
        return d
    }

    mutating func record(
        _ kind: DecisionKind, _ reason: Reason, _ i: Int, previous: AppState? = nil, taskID: TaskID? = nil,
        taskName: String? = nil, activityID: ActivityID? = nil, remaining: TimeSpan? = nil, severity: Severity = .info,
        _ detail: DecisionDetail
    ) {
        emit(
            .record(
                decision(
                    kind, reason, i, previous: previous, taskID: taskID, taskName: taskName, activityID: activityID,
                    remaining: remaining, severity: severity, detail)),
            at: i)
    }

    /// Emits `action`; `known`: the slot of its decision's app when the caller has it (``record``: the
    /// decision is about app `i`), which spares a look-up of the app's name.
    mutating func emit(_ action: Action, at known: Int? = nil) {
        guard let decision = action.decision, let app = decision.app, let i = known ?? slots[app] else {
            return out.append(action)
        }
        assert(records[i].id == app, "emit(at:) given another app's slot")
        // A decision about an app whose freeze is not confirmed yet: its suspension is recorded first when
        // the app has left `suspended` or this acts on its processes (the order of the journal stays true).
        if records[i].heldSuspend != nil {
            switch action {
            case .thaw, .terminate, .kill: flushHeldSuspend(i)
            default: if records[i].state != .suspended { flushHeldSuspend(i) }
            }
        }
        records[i].lastDecision = LastDecision(kind: decision.kind, reason: decision.reason)
        out.append(action)
        // SPEC §12: the app's termination ends the Hold calls on it (HoldLost), each once.
        if decision.kind == .terminate {
            for task in records[i].assertions {
                guard let request = holdRequests.removeValue(forKey: task) else { continue }
                out.append(.holdLost(records[i].id, task, to: request, because: decision))
            }
        }
    }

    /// Refuses the request: it does not fit app `i`'s state, which the reply carries.
    mutating func refuseInState(_ i: Int) {
        reply(.invalidState(records[i].state))
    }

    mutating func reply(_ reply: Reply) {
        out.append(.reply(reply, to: replyTo))
    }

    /// What a freeze, thaw, terminate or kill of the app acts on.
    func processes(_ i: Int) -> Processes {
        Processes(
            pid: records[i].pid, instances: records[i].instances,
            own: records[i].instances.isEmpty || (records[i].pid != nil && records[i].pidIsOwn))
    }
}

func nonNegative(_ span: TimeSpan) -> TimeSpan { Swift.max(.zero, span) }

