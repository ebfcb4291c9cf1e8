extension DaemonCore {
    /// Whether the control-call decision for `caller` depends on its supplementary groups
    /// (``LifecycleMachine/controlCallNeedsGroups(_:)``): when false, the shell feeds
    /// ``Input/controlCallReceived(caller:groups:)`` with `[]` instead of reading them. A query: it
    /// decides and changes nothing (mutating only so
    /// that a shell keeping the core in a class reads it in place, not a copy).
    public mutating func controlCallNeedsGroups(_ caller: Caller) -> Bool {
        lifecycle.controlCallNeedsGroups(caller)
    }
}

extension DaemonCore {
    /// Whether ``Input/controlCallReceived(caller:groups:)`` would allow the call (its `.ok`), without
    /// deciding anything: the shell's fast path, as ``allowsAppCall(_:caller:)`` is for App calls (an
    /// allowed control call changes nothing in the core; a refusal is still fed, and answered by the core).
    public mutating func allowsControlCall(_ caller: Caller, groups: [UInt32]) -> Bool {
        lifecycle.allowsControlCall(caller, groups: groups)
    }
}
