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
