// SPEC §13: focus from the compositor (bgtaskd-focus calls SetFocus).
extension LifecycleMachine {
    /// The compositor's front app is `app` (nil: none). Every other foreground app goes to the
    /// background with `reason`; `app` comes to the foreground with it unless it has no process (a
    /// toplevel of a program bgtaskd never saw start is not a reason to launch a second copy).
    mutating func focusChanged(_ app: AppID?, reason: Reason) {
        var target: Int?
        if let app {
            guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
            guard records[i].termination == nil else { return refuseInState(i) }
            target = i
        }
        let others = records.indices
            .filter { $0 != target && records[$0].state.isForeground && records[$0].termination == nil }
            .map { records[$0].id }
            .sorted()
        for other in others {
            if let j = slots[other] { sendToBackground(j, reason: reason) }
        }
        if let i = target, records[i].state != .notRunning {
            bringToForeground(i, exclusive: false, reason: reason)
        }
        reply(.ok)
    }
}
