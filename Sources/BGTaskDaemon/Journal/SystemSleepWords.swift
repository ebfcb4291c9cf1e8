import BGTaskCore

/// SPEC §14: the `why` of logind's idle inhibitor and of the `system-sleep` decision.
enum SystemSleepWords {
    /// "2 background tasks, 1 activity of org.example.A, org.example.B" (at most
    /// `IdleInhibition.namedLimit` apps named).
    static func why(_ live: IdleInhibition) -> String {
        var parts: [String] = []
        func count(_ n: Int, _ one: String, _ many: String) { if n > 0 { parts.append("\(n) \(n == 1 ? one : many)") } }
        count(live.assertions, "background task", "background tasks")
        count(live.tasks, "scheduled task", "scheduled tasks")
        count(live.activities, "activity", "activities")
        let named = live.apps.map(\.rawValue).joined(separator: ", ")
        let more = live.appCount > live.apps.count ? " and \(live.appCount - live.apps.count) more" : ""
        return (parts.isEmpty ? "background work" : parts.joined(separator: ", ")) + " of " + named + more
    }
}
