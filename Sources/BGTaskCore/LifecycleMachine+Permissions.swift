// issue 11 and 13: who may call what, decided on the caller's credentials the shell read from the socket.
extension LifecycleMachine {
    /// Root, or one of the app's users: the owners of its adopted instances (SPEC §13: the user manager
    /// each unit runs under, from its cgroup path), else its `User=` (re-read on every reload).
    func mayAct(_ caller: Caller, for i: Int) -> Bool {
        caller.uid == 0 || appUIDs(i).contains(caller.uid)
    }

    /// The uids besides root that may act for the app.
    func appUIDs(_ i: Int) -> [UInt32] {
        var owners: [UInt32] = []
        for instance in records[i].instances.sorted() {
            if let uid = instance.ownerUID, !owners.contains(uid) { owners.append(uid) }
        }
        if !owners.isEmpty { return owners }
        return records[i].manifest.uid.map { [$0] } ?? []
    }

    /// Whether ``appCallReceived(_:method:caller:)`` would allow the call (its `.ok`), without deciding
    /// anything: the shell's fast path (issue 15). False: feed ``Input/appCallReceived(_:method:caller:)``,
    /// which records the denial and answers it. Mutating only so that the shell reaches it in place (a
    /// read of the machine from the daemon's class would copy it); it changes nothing.
    public mutating func allowsAppCall(_ app: AppID, caller: Caller) -> Bool {
        guard let i = slots[app] else { return false }
        return mayAct(caller, for: i)
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

    /// Whether ``controlCallReceived(caller:groups:)`` needs `caller`'s supplementary groups to decide:
    /// only for a caller that is not root, with a `ControlGroup=` configured that is not its primary
    /// group. Otherwise the answer is the same for any groups, and the shell need not read them
    /// (`/proc/PID/status`: four system calls per control call) and feeds `[]`.
    public func controlCallNeedsGroups(_ caller: Caller) -> Bool {
        guard caller.uid != 0, let group = config.controlGroup else { return false }
        return caller.gid != group
    }

    /// A control call: root, or a member (primary or supplementary group) of `ControlGroup=`.
    mutating func controlCallReceived(caller: Caller, groups: [UInt32]) {
        guard allowsControlCall(caller, groups: groups) else { return reply(.failure(.permissionDenied)) }
        reply(.ok)
    }

    /// What ``controlCallReceived(caller:groups:)`` decides, as a query (the shell's fast path).
    public func allowsControlCall(_ caller: Caller, groups: [UInt32]) -> Bool {
        if caller.uid == 0 { return true }
        guard let group = config.controlGroup else { return false }
        return caller.gid == group || groups.contains(group)
    }
}
