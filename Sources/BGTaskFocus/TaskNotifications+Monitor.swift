// Which lines of bgtaskd's Monitor stream may change the continued tasks (SPEC §16), so that the notifier
// asks `ListContinuedTasks` after those only, not after every foreground, suspension or notification.

extension TaskNotifications {
    /// The decisions (`decision` of a Monitor line) after which the live continued tasks may differ:
    /// `progress` (a progress report), `grant` (a task begun), `expire` and `end` (a task cancelled,
    /// stalled, expired or ended), `terminate` (its app gone, with its tasks). A kind this build does not
    /// know counts too: a newer daemon's line is never missed.
    public static func mayChangeTasks(decision: String?) -> Bool {
        guard let decision else { return true }
        switch decision {
        case "progress", "grant", "expire", "end", "terminate": return true
        case "launch", "foreground", "background", "suspend", "resume", "deny", "run-task", "complete-task", "notify",
            "policy", "coalesced":
            return false
        default: return true
        }
    }
}
