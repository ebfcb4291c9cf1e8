// SPEC §3 and §12: background-task assertions and manager holds, their budget and expiration.
extension LifecycleMachine {
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
}
