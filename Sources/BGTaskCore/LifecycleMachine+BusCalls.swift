// SPEC §14, bus calls to a frozen app: bgtaskd-focus saw a method call addressed to the app on the session
// bus (`WakeForBusCall`); the app runs for `BusCallBudgetSec` so that it can answer.
extension LifecycleMachine {
    mutating func busCallReceived(_ app: AppID, sender: String, member: String) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        guard records[i].termination == nil, records[i].state != .notRunning else { return refuseInState(i) }
        let budget = nonNegative(config.busCallBudget)
        switch records[i].state {
        case .suspended:
            // No event: the app only has to answer the call; the budget it had stays (SPEC §3).
            resumeHeld(i, reason: .busCall, .resumedForBusCall(sender: sender, member: member, budget: budget))
            keepRunning(i, for: budget)
        case .background:
            // About to be frozen (or in its grace window): the call is answered before that.
            keepRunning(i, for: budget)
        case .active, .inactive, .notRunning:
            break
        }
        reply(.ok)
    }

    /// Opens (or extends) app `i`'s wake window to `now + budget`: the app is suspended again when it ends
    /// and nothing else holds it (the `wakeEnd` deadline).
    private mutating func keepRunning(_ i: Int, for budget: TimeSpan) {
        let end = now + budget
        if let wake = records[i].wake, wake.deadline >= end { return }
        records[i].wake = Wake(event: records[i].wake?.event, deadline: end)
        deadlines.arm(.wakeEnd(records[i].id), at: end)
    }
}
