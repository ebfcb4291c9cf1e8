// SPEC §2 sequences 4 and 5, §3, §6: scheduled tasks and remote-notification wakes in the lifecycle.
extension LifecycleMachine {
    mutating func taskRunRequested(_ app: AppID, identifier: String, kind: TaskKind, reason: Reason) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        func deny(_ denial: Reason) {
            record(.deny, denial, i, taskName: identifier, severity: .notice, .taskDenied)
            refuseInState(i)
        }
        guard records[i].manifest.lifecycleAware else { return deny(.notLifecycleAware) }
        guard records[i].termination == nil else { return deny(.terminating) }
        let alreadyPending = ((records[i].launch?.work ?? []) + records[i].waitingTasks).contains { work in
            if case .task(identifier, _, _) = work { return true }
            return false
        }
        guard records[i].tasks[identifier] == nil, !alreadyPending else {
            return deny(.invalidState)
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
                .taskWaiting(kind))
        case .background:
            startTask(i, identifier: identifier, kind: kind, reason: reason)
        }
        reply(.ok)
    }

    /// A waiting task's request was cancelled: it does not start when the app enters the background.
    mutating func waitingTaskCancelled(_ app: AppID, identifier: String) {
        guard let i = slots[app] else { return }
        records[i].waitingTasks.removeAll { work in
            if case .task(identifier, _, _) = work { return true }
            return false
        }
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
        appsGivenTasks?.insert(app)
        deliver(i, .performTask, identifier: identifier, deadline: end)
        record(
            .runTask, reason, i, taskName: identifier, remaining: budget,
            .taskStarted(kind, budget: budget))
        emit(.taskStarted(app, identifier: identifier))
        deadlines.arm(.taskWarning(app, identifier), at: Swift.max(now, end - nonNegative(config.expirationWarning)))
        deadlines.arm(.taskEnd(app, identifier), at: end)
    }

    mutating func taskCompleted(_ app: AppID, identifier: String, success: Bool) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        guard let run = records[i].tasks.removeValue(forKey: identifier) else {
            record(
                .completeTask, .unknownIdentifier, i, taskName: identifier, severity: .warning,
                .unknownTaskCompleted)
            return reply(.ok)
        }
        deadlines.cancel(.taskWarning(app, identifier))
        deadlines.cancel(.taskEnd(app, identifier))
        record(
            .completeTask, success ? .taskCompleted : .taskFailed, i, taskName: identifier,
            remaining: nonNegative(run.deadline - now),
            .taskCompleted(run.kind, success: success))
        reply(.ok)
        maybeSuspend(i)
    }

    mutating func remoteNotificationReceived(_ app: AppID, payload: Payload?) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        guard records[i].manifest.lifecycleAware, records[i].termination == nil else {
            let why: Reason = records[i].termination == nil ? .notLifecycleAware : .terminating
            record(.deny, why, i, severity: .notice, .wakeDenied)
            return refuseInState(i)
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
            .wakeDelivered(budget: budget))
    }

    mutating func endWake(_ i: Int) {
        guard let wake = records[i].wake else { return }
        if let event = wake.event { pendingAcks[event] = nil }
        records[i].wake = nil
        deadlines.cancel(.wakeEnd(records[i].id))
    }
}
