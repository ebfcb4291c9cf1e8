// issue 11 and 13: who may call what, decided on the caller's credentials the shell read from the socket.
extension LifecycleMachine {
    /// Root, or the app's own user (`User=`, re-read on every reload).
    func mayAct(_ caller: Caller, for i: Int) -> Bool {
        caller.uid == 0 || caller.uid == records[i].manifest.uid
    }

    /// A call of `io.bgtaskd.App` for `app`: allowed for root and the app's user, else denied and journaled.
    mutating func appCallReceived(_ app: AppID, method: String, caller: Caller) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        guard mayAct(caller, for: i) else {
            record(.deny, .permissionDenied, i, severity: .warning, .callerNotAppUser(method: method, caller: caller))
            return reply(.failure(.permissionDenied))
        }
        reply(.ok)
    }

    /// A control call: root, or a member (primary or supplementary group) of `ControlGroup=`.
    mutating func controlCallReceived(caller: Caller, groups: [UInt32]) {
        if caller.uid == 0 { return reply(.ok) }
        guard let group = config.controlGroup, caller.gid == group || groups.contains(group) else {
            return reply(.failure(.permissionDenied))
        }
        reply(.ok)
    }
}
