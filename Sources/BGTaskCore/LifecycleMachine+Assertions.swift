// SPEC §3 and §12: background-task assertions and manager holds, their budget and expiration.
extension LifecycleMachine {
    mutating func assertionRequested(_ app: AppID, connection: ConnectionID, name: String?) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        func deny(_ reason: Reason) {
            record(
                .deny, reason, i, taskName: name, remaining: remaining(i), severity: .notice,
                .assertionDenied(live: records[i].assertions.count))
            reply(.taskID(.invalid))
        }
        if records[i].termination != nil { return deny(.terminating) }
        if records[i].state == .notRunning { return deny(.notRunning) }
        if records[i].assertions.count >= config.maxBackgroundTasksPerApp {
            return deny(.tooManyAssertions)
        }
        // Suspended or not: resuming it for an assertion gives it no fresh budget (SPEC §3).
        if records[i].state == .background || records[i].state == .suspended, let left = remaining(i), left <= .zero {
            return deny(.budgetExhausted)
        }
        if records[i].state == .suspended { resumeHeld(i, reason: .assertionHeld) }
        let task = TaskID(nextTaskNumber)
        nextTaskNumber += 1
        // The record's own AppID: its text is shared, not the copy the request carried.
        assertionTable.insert(
            AssertionRecord(id: task, app: records[i].id, connection: connection, name: name, begun: now, warned: false))
        appendAssertion(task, to: i)
        connections.hold(task, on: connection)
        let left = remaining(i)
        record(
            .grant, .appRequest, i, taskID: task, taskName: name, remaining: left,
            .assertionGranted)
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
        func deny(_ reason: Reason) {
            record(.deny, reason, i, taskName: name, severity: .notice, .holdDenied)
            refuseInState(i)
        }
        if records[i].termination != nil { return deny(.terminating) }
        if records[i].state == .notRunning { return deny(.notRunning) }
        if records[i].state == .suspended { resumeHeld(i, reason: .managerHold) }
        let task = TaskID(nextTaskNumber)
        nextTaskNumber += 1
        assertionTable.insert(
            AssertionRecord(
                id: task, app: records[i].id, connection: connection, name: name, begun: now, warned: false,
                managerHold: true))
        appendAssertion(task, to: i)
        connections.hold(task, on: connection)
        if let replyTo = currentRequest { holdRequests[task] = replyTo }
        record(
            .grant, .managerHold, i, taskID: task, taskName: name,
            .holdGranted)
        reply(.holdID(task))
    }

    mutating func warn(_ i: Int, _ task: TaskID) {
        guard let assertion = assertionTable[task], !assertion.warned, let since = records[i].backgroundSince else { return }
        assertionTable.setWarned(task, true)
        let end = since + nonNegative(config.backgroundTimeBudget)
        let left = nonNegative(end - now)
        deliver(i, .backgroundTaskWillExpire, taskID: task, taskName: assertion.name, deadline: end)
        record(
            .expire, .budgetEnding, i, taskID: task, taskName: assertion.name, remaining: left,
            .assertionExpiring(in: left))
    }

    mutating func assertionEndRequested(_ app: AppID, _ task: TaskID) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        guard let assertion = assertionTable[task], assertion.app == app else {
            record(
                .end, .unknownIdentifier, i, taskID: task, severity: .warning,
                .unknownAssertionEnded)
            return reply(.ok)
        }
        releaseAssertion(task)
        record(
            .end, assertion.managerHold ? .managerHold : .appRequest, i, taskID: task, taskName: assertion.name,
            remaining: remaining(i),
            .assertionEnded)
        reply(.ok)
        if assertion.managerHold { holdEnded(i) }
        maybeSuspend(i)
    }

    /// A manager hold ended: the app's own assertions are back under its budget (SPEC §3), which may have
    /// ended while it was held.
    mutating func holdEnded(_ i: Int) {
        guard records[i].state == .background, records[i].termination == nil else { return }
        armBudget(i)
    }

    mutating func releaseAssertion(_ task: TaskID) {
        guard let assertion = forgetAssertion(task), let i = slots[assertion.app] else { return }
        records[i].assertions.removeFirstOccurrence(of: task)
    }

    /// Forgets `task` everywhere but its app's list of assertions. For callers that release many of one
    /// app's assertions at once: they take them out of the list in one pass (`removeAssertions`), where one
    /// removal each would make the release quadratic in the assertions held (a client holding 12,000 that
    /// disconnects would keep the daemon's queue for seconds).
    @discardableResult
    mutating func forgetAssertion(_ task: TaskID) -> AssertionRecord? {
        guard let assertion = assertionTable.remove(task) else { return nil }
        holdRequests[task] = nil
        if assertion.continued { continuedTaskReleased(task, app: assertion.app) }
        connections.release(task, on: assertion.connection)
        return assertion
    }

    /// Takes `tasks` (forgotten with `forgetAssertion`) out of app `i`'s list, in one pass.
    mutating func removeAssertions(_ tasks: Set<TaskID>, from i: Int) {
        guard !tasks.isEmpty else { return }
        records[i].assertions.removeAll { tasks.contains($0) }
    }

    /// Adds `task` to app `i`'s list, which grows by half, not double: 10,000 apps holding ten assertions
    /// each kept room for sixteen (0.4 MiB more).
    mutating func appendAssertion(_ task: TaskID, to i: Int) {
        let count = records[i].assertions.count
        if count == records[i].assertions.capacity { records[i].assertions.reserveCapacity(count + count / 2 + 1) }
        records[i].assertions.append(task)
    }
}

extension Array where Element: Equatable {
    /// Removes the first element equal to `element`, if any (an app's list holds each id once; the oldest,
    /// first in the list, usually goes first).
    mutating func removeFirstOccurrence(of element: Element) {
        if let k = firstIndex(of: element) { remove(at: k) }
    }
}
