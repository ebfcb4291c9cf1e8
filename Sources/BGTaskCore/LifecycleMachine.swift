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
public struct LifecycleMachine: Sendable {
    /// The timings in force.
    public private(set) var config: LifecycleConfig

    var records: [AppRecord] = []
    var slots: [AppID: Int] = [:]
    var assertionTable = AssertionTable()
    var activityTable: [ActivityID: ActivityRecord] = [:]
    var holdings: [ConnectionID: Holdings] = [:]
    /// Event streams: the connection an app checked in on.
    var streams: [ConnectionID: AppID] = [:]
    var pendingAcks: [EventID: AppID] = [:]
    var deadlines = DeadlineQueue<TimerKey>()
    var nextTaskNumber: UInt64 = 1
    var nextActivityNumber: UInt64 = 1
    var nextEventNumber: UInt64 = 1
    /// The latest instant seen.
    var clock: Instant = .zero
    /// The instant being processed: a deadline's own instant while it fires, else `clock`.
    var now: Instant = .zero
    var out: [Action] = []
    var removals: Set<AppID> = []

    /// A machine with no apps.
    public init(config: LifecycleConfig = .default) {
        self.config = config
    }

    /// The earliest pending deadline: arm a timer for it and feed ``Input/deadlineReached``. `nil`: none.
    public var nextDeadline: Instant? { deadlines.next }

    /// Applies one input at `now` and returns what the shell must do, in order.
    ///
    /// Requests produce exactly one ``Action/reply(_:)``; facts (`appRegistered`, `appUnregistered`,
    /// `configurationChanged`, `appLaunched`, `launchFailed`, `connectionClosed`, `processExited`,
    /// `deadlineReached`) produce none.
    public mutating func handle(_ input: Input, now: Instant) -> [Action] {
        clock = Swift.max(clock, now)
        out = []
        fireDueDeadlines()
        apply(input)
        fireDueDeadlines()
        for app in removals.sorted() { forget(app) }
        removals = []
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
        case .appUnregistered(let app): unregister(app)
        case .configurationChanged(let config): self.config = config
        case .launchRequested(let app, let background, let exclusive):
            launchRequested(app, background: background, exclusive: exclusive)
        case .appLaunched(let app, let pid): appLaunched(app, pid: pid)
        case .launchFailed(let app, let message): launchFailed(app, message: message)
        case .appCheckedIn(let app, let connection, let pid): checkIn(app, connection: connection, pid: pid)
        case .eventAcknowledged(let event): acknowledge(event)
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
        case .taskRunRequested(let app, let identifier, let kind, let reason):
            taskRunRequested(app, identifier: identifier, kind: kind, reason: reason)
        case .taskCompleted(let app, let identifier, let success):
            taskCompleted(app, identifier: identifier, success: success)
        case .remoteNotificationReceived(let app, let payload): remoteNotificationReceived(app, payload: payload)
        case .notificationPosted(let name, let app, let payload): notificationPosted(name: name, app: app, payload: payload)
        case .memoryWarningRequested(let app): memoryWarningRequested(app)
        case .memoryReclaimRequested(let count): memoryReclaimRequested(count: count)
        case .deadlineReached: break
        case .instanceAppeared(let app, let instance, let pid): instanceAppeared(app, instance, pid: pid)
        case .instanceVanished(let app, let instance): instanceVanished(app, instance)
        case .instanceReleased(let app, let instance): instanceReleased(app, instance)
        case .focusChanged(let app, let reason): focusChanged(app, reason: reason)
        }
    }

    mutating func fire(_ key: TimerKey) {
        switch key {
        case .launch(let app):
            guard let i = slots[app], records[i].termination == nil else { return }
            let r = records[i]
            if r.launch != nil {
                beginTermination(i, .launchTimeout, detail: "it did not check in within \(span(config.launchTimeout))")
            } else if r.state != .notRunning, r.connection == nil {
                beginTermination(i, .launchTimeout, detail: "it did not check in again within \(span(config.launchTimeout))")
            }
        case .grace(let app):
            guard let i = slots[app], records[i].termination == nil, records[i].state == .background else { return }
            switch records[i].grace {
            case .awaitingAck:
                records[i].grace = .none
                beginTermination(
                    i, .didEnterBackgroundTimeout,
                    detail: "did-enter-background was not acknowledged within \(span(config.didEnterBackgroundTimeout))")
            case .window:
                records[i].grace = .none
                maybeSuspend(i)
            case .none:
                break
            }
        case .budgetWarning(let app):
            guard let i = slots[app], records[i].termination == nil, records[i].state == .background else { return }
            for task in records[i].assertions where assertionTable[task]?.managerHold == false { warn(i, task) }
        case .budgetEnd(let app):
            guard let i = slots[app], records[i].termination == nil, records[i].state == .background else { return }
            // A manager hold has no time budget (SPEC §12): while one is live the budget's end terminates nothing.
            let holds = records[i].assertions.filter { assertionTable[$0]?.managerHold == true }.count
            let live = records[i].assertions.count - holds
            if live > 0, holds == 0 {
                beginTermination(
                    i, .expirationNotHandled,
                    detail: "\(live) background task\(live == 1 ? " was" : "s were") still live when its budget of \(span(config.backgroundTimeBudget)) ended")
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
                "\(run.kind.rawValue) task \(identifier) of \(app) expires in \(span(nonNegative(run.deadline - now)))")
        case .taskEnd(let app, let identifier):
            guard let i = slots[app], records[i].termination == nil, records[i].tasks[identifier] != nil else { return }
            beginTermination(i, .taskNotCompleted, detail: "task \(identifier) was not completed in time")
        case .wakeEnd(let app):
            guard let i = slots[app], records[i].wake != nil else { return }
            endWake(i)
            maybeSuspend(i)
        }
    }

    // MARK: - Registration

    mutating func register(_ manifest: AppManifest) {
        if let i = slots[manifest.id] {
            records[i].manifest = manifest
            records[i].removed = false
            removals.remove(manifest.id)
        } else {
            slots[manifest.id] = records.count
            if records.count == records.capacity {
                // Grow by a quarter, not double: records are ~300 bytes and there may be 10,000 apps.
                records.reserveCapacity(records.count + records.count / 4 + 16)
            }
            records.append(AppRecord(manifest: manifest, lastUsed: now))
        }
    }

    mutating func unregister(_ app: AppID) {
        guard let i = slots[app] else { return }
        records[i].removed = true
        if records[i].state == .notRunning, records[i].launch == nil {
            removals.insert(app)
        } else if records[i].termination == nil,
            !releaseAdopted(i, .manifestRemoved, "its manifest or desktop entry was removed")
        {
            beginTermination(i, .manifestRemoved, detail: "its manifest was removed")
        }
    }

    /// Drops an app whose manifest is gone, once it has no process. Only called at the end of `handle`,
    /// because it moves another record into the freed slot.
    mutating func forget(_ app: AppID) {
        guard let i = slots[app], records[i].removed, records[i].state == .notRunning, records[i].launch == nil
        else { return }
        cancelAllTimers(i)
        let last = records.count - 1
        if i != last {
            records.swapAt(i, last)
            slots[records[i].id] = i
        }
        records.removeLast()
        slots[app] = nil
    }

    // MARK: - Launch and check-in (SPEC §2 sequences 1 and 4)

    mutating func launchRequested(_ app: AppID, background: Bool, exclusive: Bool) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        guard records[i].termination == nil else { return reply(.failure(.invalidState)) }
        if background {
            if records[i].state == .notRunning, records[i].launch == nil {
                startLaunch(i, .user, foreground: false, cause: .userRequest, work: [])
            }
        } else {
            bringToForeground(i, exclusive: exclusive, reason: .userRequest)
        }
        reply(.ok)
    }

    mutating func startLaunch(_ i: Int, _ reason: LaunchReason, foreground: Bool, cause: Reason, work: [Work]) {
        records[i].launch = PendingLaunch(reason: reason, foreground: foreground, cause: cause, work: work)
        records[i].launchedByDaemon = true
        records[i].lastUsed = now
        let app = records[i].id
        emit(
            .launch(
                app, reason,
                decision(
                    .launch, cause, i, previous: .notRunning,
                    "launching \(app) into the \(foreground ? "foreground" : "background") (\(reason.rawValue))")))
        if records[i].manifest.lifecycleAware {
            deadlines.arm(.launch(app), at: now + nonNegative(config.launchTimeout))
        }
    }

    mutating func appLaunched(_ app: AppID, pid: Int32) {
        guard let i = slots[app], records[i].launch != nil, records[i].state == .notRunning else { return }
        records[i].pid = pid
        if !records[i].manifest.lifecycleAware { finishLaunch(i) }
    }

    mutating func launchFailed(_ app: AppID, message: String) {
        guard let i = slots[app], records[i].launch != nil, records[i].state == .notRunning else { return }
        resetToNotRunning(i)
        record(.launch, .launchFailed, i, previous: .notRunning, severity: .warning, "could not launch \(app): \(message)")
    }

    /// Delivers the launch sequence: on check-in for a lifecycle-aware app, at spawn for an unaware one.
    mutating func finishLaunch(_ i: Int) {
        guard let launch = records[i].launch else { return }
        let app = records[i].id
        records[i].launch = nil
        deadlines.cancel(.launch(app))
        records[i].state = .inactive
        deliver(i, .didFinishLaunching, launchReason: launch.reason)
        if launch.foreground {
            records[i].state = .active
            records[i].lastUsed = now
            deliver(i, .didBecomeActive)
        } else {
            enterBackground(i)
        }
        let pidText = records[i].pid.map { " (pid \($0))" } ?? ""
        record(
            .launch, launch.cause, i, previous: .notRunning, remaining: remaining(i),
            "\(app)\(pidText) launched into the \(launch.foreground ? "foreground" : "background") (\(launch.reason.rawValue))")
        for work in launch.work {
            switch work {
            case .task(let identifier, let kind, let reason):
                if records[i].state.isForeground {
                    // Brought to the foreground while launching for the task: it waits (SPEC §6).
                    records[i].waitingTasks.append(work)
                } else {
                    startTask(i, identifier: identifier, kind: kind, reason: reason)
                }
            case .remoteNotification(let payload):
                startWake(i, payload: payload)
            }
        }
    }

    mutating func checkIn(_ app: AppID, connection: ConnectionID, pid: Int32?) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        guard records[i].connection == nil, streams[connection] == nil else {
            return reply(.failure(.alreadyCheckedIn))
        }
        guard records[i].termination == nil else { return reply(.failure(.invalidState)) }
        records[i].connection = connection
        streams[connection] = app
        if let pid { records[i].pid = pid }
        // The first reply of the stream carries the state before the launch events that follow it.
        reply(.checkedIn(state: records[i].state))
        if records[i].launch != nil {
            finishLaunch(i)
        } else if records[i].state == .notRunning {
            // Started by hand, not by the daemon: a user launch into the foreground.
            records[i].launch = PendingLaunch(reason: .user, foreground: true, cause: .checkedIn, work: [])
            records[i].launchedByDaemon = false
            finishLaunch(i)
        } else {
            deadlines.cancel(.launch(app))
        }
    }

    mutating func acknowledge(_ event: EventID) {
        reply(.ok)
        guard let app = pendingAcks.removeValue(forKey: event), let i = slots[app] else { return }
        if records[i].grace == .awaitingAck(event) {
            records[i].grace = .none
            deadlines.cancel(.grace(app))
            maybeSuspend(i)
        } else if let wake = records[i].wake, wake.event == event {
            endWake(i)
            maybeSuspend(i)
        }
    }

    // MARK: - Foreground, background, interruption (SPEC §2 sequences 2, 3, 6)

    mutating func foregroundRequested(_ app: AppID, exclusive: Bool) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        guard records[i].termination == nil else { return reply(.failure(.invalidState)) }
        bringToForeground(i, exclusive: exclusive, reason: .userRequest)
        reply(.ok)
    }

    mutating func bringToForeground(_ i: Int, exclusive: Bool, reason: Reason) {
        let app = records[i].id
        if exclusive {
            let others = records.indices
                .filter { records[$0].id != app && records[$0].state.isForeground && records[$0].termination == nil }
                .map { records[$0].id }
                .sorted()
            for other in others {
                if let j = slots[other] { sendToBackground(j, reason: .anotherAppForeground) }
            }
        }
        switch records[i].state {
        case .notRunning:
            if records[i].launch != nil {
                records[i].launch?.foreground = true
            } else {
                startLaunch(i, .user, foreground: true, cause: reason, work: [])
            }
        case .active:
            break
        case .inactive:
            records[i].interrupted = false
            records[i].state = .active
            records[i].lastUsed = now
            deliver(i, .didBecomeActive)
            record(.foreground, reason, i, previous: .inactive, "\(app) is active")
        case .background:
            enterForeground(i, reason: reason, previous: .background)
        case .suspended:
            thaw(i, reason: reason)
            enterForeground(i, reason: reason, previous: .suspended)
        }
    }

    /// Sequence 3 from a running background app: `will-enter-foreground`, `did-become-active`.
    mutating func enterForeground(_ i: Int, reason: Reason, previous: AppState) {
        let app = records[i].id
        clearGrace(i)
        deadlines.cancel(.budgetWarning(app))
        deadlines.cancel(.budgetEnd(app))
        records[i].backgroundSince = nil
        // The budget resets in the foreground, and with it the warnings.
        for task in records[i].assertions { assertionTable.setWarned(task, false) }
        records[i].state = .inactive
        deliver(i, .willEnterForeground)
        records[i].state = .active
        records[i].lastUsed = now
        deliver(i, .didBecomeActive)
        record(.foreground, reason, i, previous: previous, "\(app) came to the foreground")
    }

    mutating func backgroundRequested(_ app: AppID) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        guard records[i].termination == nil else { return reply(.failure(.invalidState)) }
        switch records[i].state {
        case .active, .inactive:
            sendToBackground(i, reason: .userRequest)
        case .background, .suspended:
            break
        case .notRunning:
            guard records[i].launch != nil else { return reply(.failure(.invalidState)) }
            records[i].launch?.foreground = false
        }
        reply(.ok)
    }

    /// Sequence 2: `will-resign-active` (if active), `did-enter-background`.
    mutating func sendToBackground(_ i: Int, reason: Reason) {
        let previous = records[i].state
        switch previous {
        case .active:
            records[i].state = .inactive
            deliver(i, .willResignActive)
        case .inactive:
            break
        case .notRunning, .background, .suspended:
            return
        }
        records[i].interrupted = false
        records[i].leftForeground = now
        enterBackground(i)
        record(
            .background, reason, i, previous: previous, remaining: remaining(i),
            "\(records[i].id) went to the background with \(span(nonNegative(config.backgroundTimeBudget))) of background time")
        startWaitingTasks(i)
    }

    /// Enters the background: `did-enter-background` to acknowledge within the grace window, budget from now.
    mutating func enterBackground(_ i: Int) {
        let app = records[i].id
        records[i].state = .background
        records[i].backgroundSince = now
        let graceEnd = now + nonNegative(config.didEnterBackgroundTimeout)
        if records[i].manifest.lifecycleAware {
            let event = deliver(i, .didEnterBackground, needsAck: true, deadline: graceEnd)
            records[i].grace = .awaitingAck(event)
            if let event { pendingAcks[event] = app }
        } else {
            records[i].grace = .window
        }
        deadlines.arm(.grace(app), at: graceEnd)
        armBudget(i)
    }

    mutating func armBudget(_ i: Int) {
        guard let since = records[i].backgroundSince else { return }
        let app = records[i].id
        let end = since + nonNegative(config.backgroundTimeBudget)
        deadlines.arm(.budgetWarning(app), at: Swift.max(since, end - nonNegative(config.expirationWarning)))
        deadlines.arm(.budgetEnd(app), at: end)
    }

    mutating func interruptionBegan(_ app: AppID) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        guard records[i].termination == nil else { return reply(.failure(.invalidState)) }
        switch records[i].state {
        case .active:
            records[i].state = .inactive
            records[i].interrupted = true
            deliver(i, .willResignActive)
            record(.foreground, .interruption, i, previous: .active, "\(app) was interrupted")
            reply(.ok)
        case .inactive where records[i].interrupted:
            reply(.ok)
        default:
            reply(.failure(.invalidState))
        }
    }

    mutating func interruptionEnded(_ app: AppID) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        guard records[i].termination == nil else { return reply(.failure(.invalidState)) }
        switch records[i].state {
        case .inactive where records[i].interrupted:
            records[i].interrupted = false
            records[i].state = .active
            records[i].lastUsed = now
            deliver(i, .didBecomeActive)
            record(.foreground, .interruptionEnded, i, previous: .inactive, "\(app)'s interruption ended")
            reply(.ok)
        case .active:
            reply(.ok)
        default:
            reply(.failure(.invalidState))
        }
    }

    // MARK: - Suspension and resumption (SPEC §3)

    /// Freezes the app at once if it is in the background, acknowledged, and nothing holds it.
    mutating func maybeSuspend(_ i: Int) {
        let r = records[i]
        guard r.state == .background, r.termination == nil, r.grace == .none, !r.holdsBackground else { return }
        if r.manifest.exempt { return keepExempt(i) }
        let app = r.id
        deadlines.cancel(.budgetWarning(app))
        deadlines.cancel(.budgetEnd(app))
        records[i].state = .suspended
        emit(
            .freeze(
                app,
                decision(
                    .suspend, .noAssertions, i, previous: .background, remaining: remaining(i),
                    "suspended \(app): no background task, activity or scheduled task holds it")))
    }

    /// Thaws a suspended app into the background and delivers its queued notifications (SPEC §7).
    mutating func thaw(_ i: Int, reason: Reason) {
        let app = records[i].id
        records[i].state = .background
        emit(.thaw(app, decision(.resume, reason, i, previous: .suspended, "resumed \(app) (\(reason.rawValue))")))
        for notification in records[i].notifications.drain() {
            deliver(i, .notification, name: notification.name, payload: notification.payload)
        }
    }

    /// Thaws a suspended app for an assertion, an activity or a manager hold: no event, and the budget it
    /// had (SPEC §3: only the foreground resets it).
    mutating func resumeHeld(_ i: Int, reason: Reason) {
        thaw(i, reason: reason)
        if records[i].backgroundSince == nil { records[i].backgroundSince = now }
        records[i].grace = .none
        armBudget(i)
    }

    /// Sequence 5: thaw, `did-enter-background`; the caller delivers the event.
    mutating func resumeForEvent(_ i: Int, reason: Reason) {
        thaw(i, reason: reason)
        enterBackground(i)
    }

    // MARK: - Termination (SPEC §2 sequence 7)

    mutating func terminateRequested(_ app: AppID) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        if records[i].termination != nil { return reply(.ok) }
        guard records[i].state != .notRunning || records[i].launch != nil else {
            return reply(.failure(.invalidState))
        }
        beginTermination(i, .userRequest, detail: "requested")
        reply(.ok)
    }

    mutating func beginTermination(_ i: Int, _ reason: Reason, detail: String) {
        let app = records[i].id
        let previous = records[i].state
        // Only the escalation counts from now on.
        cancelAllTimers(i)
        clearGrace(i)
        endWake(i)
        records[i].tasks = [:]
        if previous == .notRunning {
            records[i].launch = nil
            if records[i].pid == nil {
                // Never spawned (or never reported): nothing to signal, the launch is just cancelled.
                emit(.kill(app, decision(.terminate, reason, i, previous: previous, severity: .notice, "cancelled the launch of \(app): \(detail)")))
                resetToNotRunning(i)
                return
            }
        }
        records[i].launch = nil
        if previous == .suspended {
            records[i].termination = Termination(reason: reason, phase: .killed)
            emit(.kill(app, decision(.terminate, reason, i, previous: previous, severity: .notice, "killed suspended \(app) without events: \(detail)")))
            return
        }
        if records[i].manifest.lifecycleAware, records[i].connection != nil {
            let deadline = now + nonNegative(config.willTerminateTimeout)
            records[i].termination = Termination(reason: reason, phase: .willTerminate)
            deliver(i, .willTerminate, deadline: deadline)
            record(
                .terminate, reason, i, previous: previous, severity: .notice,
                "terminating \(app): \(detail); will-terminate sent, SIGTERM in \(span(nonNegative(config.willTerminateTimeout)))")
            deadlines.arm(.escalation(app), at: deadline)
        } else {
            records[i].termination = Termination(reason: reason, phase: .sigterm)
            emit(
                .terminate(
                    app,
                    decision(
                        .terminate, reason, i, previous: previous, severity: .notice,
                        "terminating \(app): \(detail); SIGTERM, SIGKILL in \(span(nonNegative(config.killTimeout)))")))
            deadlines.arm(.escalation(app), at: now + nonNegative(config.killTimeout))
        }
    }

    mutating func escalate(_ i: Int) {
        guard let termination = records[i].termination else { return }
        let app = records[i].id
        switch termination.phase {
        case .willTerminate:
            records[i].termination?.phase = .sigterm
            emit(
                .terminate(
                    app,
                    decision(
                        .terminate, termination.reason, i, severity: .notice,
                        "\(app) did not exit within \(span(nonNegative(config.willTerminateTimeout))) of will-terminate: SIGTERM")))
            deadlines.arm(.escalation(app), at: now + nonNegative(config.killTimeout))
        case .sigterm:
            records[i].termination?.phase = .killed
            emit(
                .kill(
                    app,
                    decision(
                        .terminate, termination.reason, i, severity: .notice,
                        "\(app) did not exit within \(span(nonNegative(config.killTimeout))) of SIGTERM: SIGKILL")))
        case .killed:
            break
        }
    }

    mutating func processExited(_ app: AppID, pid: Int32?) {
        guard let i = slots[app] else { return }
        if let pid, let current = records[i].pid, pid != current { return }
        let r = records[i]
        guard r.state != .notRunning || r.launch != nil || r.termination != nil else { return }
        let previous = records[i].state
        let oldPID = records[i].pid
        let termination = records[i].termination
        let held = records[i].assertions.count + records[i].activities.count
        resetToNotRunning(i)
        let releasing = held > 0 ? "; released \(held) assertion\(held == 1 ? "" : "s")/activit\(held == 1 ? "y" : "ies")" : ""
        let message =
            termination.map { "\(app) exited after termination (\($0.reason.rawValue))\(releasing)" }
            ?? "\(app) exited by itself\(releasing)"
        emit(
            .record(
                Decision(
                    kind: .terminate, reason: termination?.reason ?? .appExited, app: app, state: .notRunning,
                    previousState: previous, pid: oldPID, severity: termination == nil ? .notice : .info, message: message)))
    }

    /// Forgets everything about the app's process: assertions, activities, tasks, queue, timers.
    mutating func resetToNotRunning(_ i: Int) {
        let app = records[i].id
        cancelAllTimers(i)
        clearGrace(i)
        endWake(i)
        for task in records[i].assertions { releaseAssertion(task) }
        for activity in records[i].activities { releaseActivity(activity) }
        if let connection = records[i].connection { streams[connection] = nil }
        var fresh = AppRecord(manifest: records[i].manifest, lastUsed: records[i].lastUsed)
        fresh.lastDecision = records[i].lastDecision
        fresh.removed = records[i].removed
        fresh.instances = records[i].instances
        records[i] = fresh
        if fresh.removed { removals.insert(app) }
    }

    // MARK: - Assertions (SPEC §3 begin/end, budget, expiration)

    mutating func assertionRequested(_ app: AppID, connection: ConnectionID, name: String?) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        func deny(_ reason: Reason, _ why: String) {
            record(
                .deny, reason, i, taskName: name, remaining: remaining(i), severity: .notice,
                "denied a background task\(name.map { " (\($0))" } ?? "") to \(app): \(why)")
            reply(.taskID(.invalid))
        }
        if records[i].termination != nil { return deny(.terminating, "it is being terminated") }
        if records[i].state == .notRunning { return deny(.notRunning, "it is not running") }
        if records[i].assertions.count >= config.maxBackgroundTasksPerApp {
            return deny(.tooManyAssertions, "it already holds \(records[i].assertions.count) live background tasks")
        }
        // Suspended or not: resuming it for an assertion gives it no fresh budget (SPEC §3).
        if records[i].state == .background || records[i].state == .suspended, let left = remaining(i), left <= .zero {
            return deny(.budgetExhausted, "its background time is spent")
        }
        if records[i].state == .suspended { resumeHeld(i, reason: .assertionHeld) }
        let task = TaskID(nextTaskNumber)
        nextTaskNumber += 1
        // The record's own AppID: its text is shared, not the copy the request carried.
        assertionTable.insert(
            AssertionRecord(id: task, app: records[i].id, connection: connection, name: name, begun: now, warned: false))
        records[i].assertions.append(task)
        holdings[connection, default: Holdings()].tasks.insert(task)
        let left = remaining(i)
        record(
            .grant, .appRequest, i, taskID: task, taskName: name, remaining: left,
            "granted background task \(task)\(name.map { " (\($0))" } ?? "") to \(app)\(left.map { ", \(span($0)) of background time left" } ?? "")")
        reply(.taskID(task))
        // Begun after the warning point: warn it at once, it will not see the budget's warning.
        if records[i].state == .background, let left, left <= nonNegative(config.expirationWarning) {
            warn(i, task)
        }
    }

    /// A manager hold (SPEC §12): like an assertion, but with no time budget and Manager permission (checked by
    /// the shell). Refused for an app that is not running or is being terminated.
    mutating func holdRequested(_ app: AppID, connection: ConnectionID, name: String?) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        func deny(_ reason: Reason, _ why: String) {
            record(.deny, reason, i, taskName: name, severity: .notice, "denied a manager hold on \(app): \(why)")
            reply(.failure(.invalidState))
        }
        if records[i].termination != nil { return deny(.terminating, "it is being terminated") }
        if records[i].state == .notRunning { return deny(.notRunning, "it is not running") }
        if records[i].state == .suspended { resumeHeld(i, reason: .managerHold) }
        let task = TaskID(nextTaskNumber)
        nextTaskNumber += 1
        assertionTable.insert(
            AssertionRecord(
                id: task, app: records[i].id, connection: connection, name: name, begun: now, warned: false,
                managerHold: true))
        records[i].assertions.append(task)
        holdings[connection, default: Holdings()].tasks.insert(task)
        record(
            .grant, .managerHold, i, taskID: task, taskName: name,
            "granted manager hold \(task)\(name.map { " (\($0))" } ?? "") on \(app): it runs without a time budget until the hold ends")
        reply(.taskID(task))
    }

    /// SIGTERM: terminates every app the daemon started (SPEC §9); apps that checked in by themselves are left.
    mutating func stopRequested() {
        for i in records.indices.sorted(by: { records[$0].id < records[$1].id }) {
            let r = records[i]
            guard r.launchedByDaemon, r.termination == nil, r.state != .notRunning || r.launch != nil else { continue }
            beginTermination(i, .daemonStopping, detail: "the daemon is stopping")
        }
    }

    mutating func warn(_ i: Int, _ task: TaskID) {
        guard let assertion = assertionTable[task], !assertion.warned, let since = records[i].backgroundSince else { return }
        assertionTable.setWarned(task, true)
        let end = since + nonNegative(config.backgroundTimeBudget)
        let left = nonNegative(end - now)
        deliver(i, .backgroundTaskWillExpire, taskID: task, taskName: assertion.name, deadline: end)
        record(
            .expire, .budgetEnding, i, taskID: task, taskName: assertion.name, remaining: left,
            "background task \(task)\(assertion.name.map { " (\($0))" } ?? "") of \(records[i].id) expires in \(span(left))")
    }

    mutating func assertionEndRequested(_ app: AppID, _ task: TaskID) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        guard let assertion = assertionTable[task], assertion.app == app else {
            record(
                .end, .unknownIdentifier, i, taskID: task, severity: .warning,
                "\(app) ended background task \(task), which is unknown or already ended")
            return reply(.ok)
        }
        releaseAssertion(task)
        record(
            .end, assertion.managerHold ? .managerHold : .appRequest, i, taskID: task, taskName: assertion.name,
            remaining: remaining(i),
            "\(app) ended background task \(task)\(assertion.name.map { " (\($0))" } ?? "")")
        reply(.ok)
        maybeSuspend(i)
    }

    mutating func releaseAssertion(_ task: TaskID) {
        guard let assertion = assertionTable.remove(task) else { return }
        if let i = slots[assertion.app] { records[i].assertions.removeAll { $0 == task } }
        holdings[assertion.connection]?.tasks.remove(task)
        if holdings[assertion.connection]?.isEmpty == true { holdings[assertion.connection] = nil }
    }

    // MARK: - Activities (SPEC §4)

    mutating func activityRequested(_ app: AppID, connection: ConnectionID, mode: BackgroundMode) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        func deny(_ reason: Reason, _ error: CoreError, _ why: String) {
            record(.deny, reason, i, severity: .notice, "denied a \(mode.rawValue) activity to \(app): \(why)")
            reply(.failure(error))
        }
        guard records[i].manifest.backgroundModes.contains(mode) else {
            return deny(.modeNotDeclared, .modeNotDeclared, "its manifest does not declare \(mode.rawValue)")
        }
        guard mode.isContinuous else {
            return deny(.modeNotContinuous, .modeNotContinuous, "\(mode.rawValue) is not a continuous mode")
        }
        if records[i].termination != nil { return deny(.terminating, .invalidState, "it is being terminated") }
        if records[i].state == .notRunning { return deny(.notRunning, .invalidState, "it is not running") }
        if records[i].state == .suspended { resumeHeld(i, reason: .activityHeld) }
        let activity = ActivityID(nextActivityNumber)
        nextActivityNumber += 1
        activityTable[activity] = ActivityRecord(
            id: activity, app: records[i].id, connection: connection, mode: mode, begun: now)
        records[i].activities.append(activity)
        holdings[connection, default: Holdings()].activities.insert(activity)
        record(.grant, .appRequest, i, activityID: activity, "granted \(mode.rawValue) activity \(activity) to \(app)")
        reply(.activityID(activity))
    }

    mutating func activityEndRequested(_ app: AppID, _ activity: ActivityID) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        guard let record = activityTable[activity], record.app == app else {
            self.record(
                .end, .unknownIdentifier, i, activityID: activity, severity: .warning,
                "\(app) ended activity \(activity), which is unknown or already ended")
            return reply(.ok)
        }
        releaseActivity(activity)
        self.record(.end, .appRequest, i, activityID: activity, "\(app) ended \(record.mode.rawValue) activity \(activity)")
        reply(.ok)
        maybeSuspend(i)
    }

    mutating func releaseActivity(_ activity: ActivityID) {
        guard let record = activityTable.removeValue(forKey: activity) else { return }
        if let i = slots[record.app] { records[i].activities.removeAll { $0 == activity } }
        holdings[record.connection]?.activities.remove(activity)
        if holdings[record.connection]?.isEmpty == true { holdings[record.connection] = nil }
    }

    // MARK: - Connections (SPEC §3: an assertion lives no longer than its connection)

    mutating func connectionClosed(_ connection: ConnectionID) {
        var affected: Set<AppID> = []
        if let held = holdings.removeValue(forKey: connection) {
            for task in held.tasks.sorted() {
                guard let assertion = assertionTable[task], let i = slots[assertion.app] else { continue }
                releaseAssertion(task)
                if assertion.managerHold {
                    record(
                        .end, .managerHold, i, taskID: task, taskName: assertion.name,
                        "manager hold \(task) on \(assertion.app) ended: its connection closed")
                } else {
                    record(
                        .end, .clientDisconnected, i, taskID: task, taskName: assertion.name, remaining: remaining(i),
                        "released background task \(task) of \(assertion.app): its connection closed")
                }
                affected.insert(assertion.app)
            }
            for activity in held.activities.sorted() {
                guard let owned = activityTable[activity], let i = slots[owned.app] else { continue }
                releaseActivity(activity)
                record(
                    .end, .clientDisconnected, i, activityID: activity,
                    "released \(owned.mode.rawValue) activity \(activity) of \(owned.app): its connection closed")
                affected.insert(owned.app)
            }
        }
        if let app = streams.removeValue(forKey: connection), let i = slots[app] {
            records[i].connection = nil
            if records[i].termination == nil, records[i].state != .notRunning {
                if records[i].launchedByDaemon {
                    // The daemon's own child may check in again; if it does not, launch-timeout.
                    if records[i].manifest.lifecycleAware {
                        deadlines.arm(.launch(app), at: now + nonNegative(config.launchTimeout))
                    }
                } else if records[i].instances.isEmpty {
                    // Started by hand: its event stream was all we knew of it.
                    let previous = records[i].state
                    if previous == .suspended { thaw(i, reason: .clientDisconnected) }
                    resetToNotRunning(i)
                    record(
                        .terminate, .clientDisconnected, i, previous: previous,
                        "\(app) closed its event stream and is considered gone")
                }
            }
            affected.insert(app)
        }
        for app in affected.sorted() {
            if let i = slots[app] { maybeSuspend(i) }
        }
    }

    // MARK: - Scheduled tasks and remote notifications (SPEC §2 sequences 4 and 5, §3)

    mutating func taskRunRequested(_ app: AppID, identifier: String, kind: TaskKind, reason: Reason) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        func deny(_ denial: Reason, _ why: String) {
            record(.deny, denial, i, taskName: identifier, severity: .notice, "did not run task \(identifier) of \(app): \(why)")
            reply(.failure(.invalidState))
        }
        guard records[i].manifest.lifecycleAware else { return deny(.notLifecycleAware, "it is not lifecycle-aware") }
        guard records[i].termination == nil else { return deny(.terminating, "it is being terminated") }
        let alreadyPending = ((records[i].launch?.work ?? []) + records[i].waitingTasks).contains { work in
            if case .task(identifier, _, _) = work { return true }
            return false
        }
        guard records[i].tasks[identifier] == nil, !alreadyPending else {
            return deny(.invalidState, "that task is already running")
        }
        switch records[i].state {
        case .notRunning:
            if records[i].launch != nil {
                records[i].launch?.work.append(.task(identifier: identifier, kind: kind, reason: reason))
            } else {
                startLaunch(
                    i, .backgroundTask, foreground: false, cause: reason,
                    work: [.task(identifier: identifier, kind: kind, reason: reason)])
            }
        case .suspended:
            resumeForEvent(i, reason: reason)
            startTask(i, identifier: identifier, kind: kind, reason: reason)
        case .active, .inactive:
            // SPEC §6: tasks run only in the background; this one waits until the app has entered it.
            records[i].waitingTasks.append(.task(identifier: identifier, kind: kind, reason: reason))
            record(
                .runTask, .waitingForBackground, i, taskName: identifier,
                "\(kind.rawValue) task \(identifier) of \(app) is due and waits until \(app) enters the background")
        case .background:
            startTask(i, identifier: identifier, kind: kind, reason: reason)
        }
        reply(.ok)
    }

    /// Starts the tasks that fell due while the app was in the foreground (it has just entered the background).
    mutating func startWaitingTasks(_ i: Int) {
        let waiting = records[i].waitingTasks
        records[i].waitingTasks = []
        for case .task(let identifier, let kind, let reason) in waiting {
            startTask(i, identifier: identifier, kind: kind, reason: reason)
        }
    }

    mutating func startTask(_ i: Int, identifier: String, kind: TaskKind, reason: Reason) {
        let app = records[i].id
        let budget = nonNegative(kind == .refresh ? config.refreshTaskBudget : config.processingTaskBudget)
        let end = now + budget
        records[i].tasks[identifier] = TaskRun(kind: kind, started: now, deadline: end, warned: false)
        deliver(i, .performTask, identifier: identifier, deadline: end)
        record(
            .runTask, reason, i, taskName: identifier, remaining: budget,
            "running \(kind.rawValue) task \(identifier) of \(app) for at most \(span(budget))")
        deadlines.arm(.taskWarning(app, identifier), at: Swift.max(now, end - nonNegative(config.expirationWarning)))
        deadlines.arm(.taskEnd(app, identifier), at: end)
    }

    mutating func taskCompleted(_ app: AppID, identifier: String, success: Bool) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        guard let run = records[i].tasks.removeValue(forKey: identifier) else {
            record(
                .completeTask, .unknownIdentifier, i, taskName: identifier, severity: .warning,
                "\(app) completed task \(identifier), which is not running")
            return reply(.ok)
        }
        deadlines.cancel(.taskWarning(app, identifier))
        deadlines.cancel(.taskEnd(app, identifier))
        record(
            .completeTask, success ? .taskCompleted : .taskFailed, i, taskName: identifier,
            remaining: nonNegative(run.deadline - now),
            "\(app) completed \(run.kind.rawValue) task \(identifier)\(success ? "" : " unsuccessfully")")
        reply(.ok)
        maybeSuspend(i)
    }

    mutating func remoteNotificationReceived(_ app: AppID, payload: Payload?) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        guard records[i].manifest.lifecycleAware, records[i].termination == nil else {
            let why: Reason = records[i].termination == nil ? .notLifecycleAware : .terminating
            record(.deny, why, i, severity: .notice, "did not wake \(app) for a remote notification (\(why.rawValue))")
            return reply(.failure(.invalidState))
        }
        switch records[i].state {
        case .notRunning:
            if records[i].launch != nil {
                records[i].launch?.work.append(.remoteNotification(payload))
            } else {
                startLaunch(
                    i, .remoteNotification, foreground: false, cause: .remoteNotification,
                    work: [.remoteNotification(payload)])
            }
        case .suspended:
            resumeForEvent(i, reason: .remoteNotification)
            startWake(i, payload: payload)
        case .active, .inactive, .background:
            startWake(i, payload: payload)
        }
        reply(.ok)
    }

    /// Delivers a remote notification; the app may run for `RefreshTaskBudgetSec` or until it acknowledges it.
    mutating func startWake(_ i: Int, payload: Payload?) {
        let app = records[i].id
        endWake(i)
        let budget = nonNegative(config.refreshTaskBudget)
        let end = now + budget
        let event = deliver(i, .notification, needsAck: true, name: "remote-notification", payload: payload, deadline: end)
        records[i].wake = Wake(event: event, deadline: end)
        if let event { pendingAcks[event] = app }
        deadlines.arm(.wakeEnd(app), at: end)
        record(
            .notify, .remoteNotification, i, remaining: budget,
            "delivered a remote notification to \(app), which may run for \(span(budget))")
    }

    mutating func endWake(_ i: Int) {
        guard let wake = records[i].wake else { return }
        if let event = wake.event { pendingAcks[event] = nil }
        records[i].wake = nil
        deadlines.cancel(.wakeEnd(records[i].id))
    }

    // MARK: - Notifications (SPEC §7) and memory pressure (SPEC §8)

    mutating func notificationPosted(name: String, app target: AppID?, payload: Payload?) {
        let targets: [Int]
        if let target {
            guard let i = slots[target] else { return reply(.failure(.noSuchApp)) }
            targets = [i]
        } else {
            targets = records.indices.sorted { records[$0].id < records[$1].id }
        }
        for i in targets {
            let app = records[i].id
            guard records[i].manifest.lifecycleAware else {
                if target != nil {
                    record(.notify, .notLifecycleAware, i, "did not deliver notification \(name) to \(app): it is not lifecycle-aware")
                }
                continue
            }
            guard records[i].termination == nil, records[i].state != .notRunning else {
                if target != nil {
                    record(.notify, .notRunning, i, "did not deliver notification \(name) to \(app): it is not running")
                }
                continue
            }
            if records[i].state == .suspended {
                switch records[i].notifications.post(name: name, payload: payload, limit: config.maxQueuedNotificationsPerApp) {
                case .queued:
                    record(.notify, .notificationQueued, i, "queued notification \(name) for suspended \(app)")
                case .coalesced:
                    record(.notify, .notificationQueued, i, "queued notification \(name) for suspended \(app), replacing the one queued earlier")
                case .queuedDroppingOldest(let dropped):
                    record(
                        .notify, .queueFull, i, severity: .warning,
                        "queued notification \(name) for suspended \(app); its queue was full, dropped the oldest (\(dropped))")
                }
            } else if deliver(i, .notification, name: name, payload: payload) != nil {
                record(.notify, .notificationPosted, i, "delivered notification \(name) to \(app)")
            }
        }
        reply(.ok)
    }

    mutating func memoryWarningRequested(_ target: AppID?) {
        let targets: [Int]
        if let target {
            guard let i = slots[target] else { return reply(.failure(.noSuchApp)) }
            targets = [i]
        } else {
            targets = records.indices.filter { records[$0].state == .background }.sorted { records[$0].id < records[$1].id }
        }
        for i in targets {
            let state = records[i].state
            guard records[i].termination == nil, state != .notRunning, state != .suspended else { continue }
            if deliver(i, .memoryWarning) != nil {
                record(.notify, .memoryPressure, i, "sent memory-warning to \(records[i].id)")
            }
        }
        reply(.ok)
    }

    mutating func memoryReclaimRequested(count: Int) {
        func victims(_ state: AppState) -> [AppID] {
            records.indices
                .filter { records[$0].state == state && records[$0].termination == nil }
                .sorted { (records[$0].lastUsed, records[$0].id) < (records[$1].lastUsed, records[$1].id) }
                .map { records[$0].id }
        }
        for app in (victims(.suspended) + victims(.background)).prefix(Swift.max(0, count)) {
            if let i = slots[app] { beginTermination(i, .memoryPressure, detail: "memory pressure") }
        }
        reply(.ok)
    }

    // MARK: - Helpers

    mutating func cancelAllTimers(_ i: Int) {
        let app = records[i].id
        for key in [TimerKey.launch(app), .grace(app), .budgetWarning(app), .budgetEnd(app), .escalation(app), .wakeEnd(app)] {
            deadlines.cancel(key)
        }
        for identifier in records[i].tasks.keys {
            deadlines.cancel(.taskWarning(app, identifier))
            deadlines.cancel(.taskEnd(app, identifier))
        }
    }

    mutating func clearGrace(_ i: Int) {
        if case .awaitingAck(let event?) = records[i].grace { pendingAcks[event] = nil }
        records[i].grace = .none
        deadlines.cancel(.grace(records[i].id))
    }

    /// Background time left at `now`: `nil` unless the app is in the background or suspended.
    func remaining(_ i: Int) -> TimeSpan? {
        remaining(of: records[i], at: now)
    }

    func remaining(of record: AppRecord, at instant: Instant) -> TimeSpan? {
        guard record.state == .background || record.state == .suspended, let since = record.backgroundSince else {
            return nil
        }
        return nonNegative(since + nonNegative(config.backgroundTimeBudget) - instant)
    }

    /// Sends an event on the app's stream. Lifecycle-unaware apps and apps without a stream get nothing (`nil`).
    @discardableResult
    mutating func deliver(
        _ i: Int, _ kind: LifecycleEventKind, needsAck: Bool = false, taskID: TaskID? = nil, taskName: String? = nil,
        identifier: String? = nil, name: String? = nil, payload: Payload? = nil, launchReason: LaunchReason? = nil,
        deadline: Instant? = nil
    ) -> EventID? {
        guard records[i].manifest.lifecycleAware, let connection = records[i].connection else { return nil }
        let id = EventID(nextEventNumber)
        nextEventNumber += 1
        let event = Event(
            id: id, kind: kind, state: records[i].state, needsAck: needsAck, taskID: taskID, taskName: taskName,
            identifier: identifier, name: name, payload: payload, launchReason: launchReason, deadline: deadline)
        out.append(.deliver(records[i].id, connection, event))
        return id
    }

    func decision(
        _ kind: DecisionKind, _ reason: Reason, _ i: Int, previous: AppState? = nil, taskID: TaskID? = nil,
        taskName: String? = nil, activityID: ActivityID? = nil, remaining: TimeSpan? = nil, severity: Severity = .info,
        _ message: String
    ) -> Decision {
        Decision(
            kind: kind, reason: reason, app: records[i].id, state: records[i].state, previousState: previous,
            taskID: taskID, taskName: taskName, activityID: activityID, remaining: remaining, pid: records[i].pid,
            severity: severity, message: message)
    }

    mutating func record(
        _ kind: DecisionKind, _ reason: Reason, _ i: Int, previous: AppState? = nil, taskID: TaskID? = nil,
        taskName: String? = nil, activityID: ActivityID? = nil, remaining: TimeSpan? = nil, severity: Severity = .info,
        _ message: String
    ) {
        emit(
            .record(
                decision(
                    kind, reason, i, previous: previous, taskID: taskID, taskName: taskName, activityID: activityID,
                    remaining: remaining, severity: severity, message)))
    }

    mutating func emit(_ action: Action) {
        if let decision = action.decision, let app = decision.app, let i = slots[app] {
            records[i].lastDecision = decision
        }
        out.append(action)
    }

    mutating func reply(_ reply: Reply) {
        out.append(.reply(reply))
    }
}

func nonNegative(_ span: TimeSpan) -> TimeSpan { Swift.max(.zero, span) }

func span(_ value: TimeSpan) -> String { value.description }
