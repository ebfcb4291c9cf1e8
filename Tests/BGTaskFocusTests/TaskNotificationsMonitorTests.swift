import BGTaskFocus
import Testing

/// The notifier asks for the continued tasks only after a Monitor line that can change them.
@Suite struct TaskNotificationsMonitorTests {
    @Test func onlyTaskLinesAskForTheTasks() {
        for kind in ["progress", "grant", "expire", "end", "terminate"] {
            #expect(TaskNotifications.mayChangeTasks(decision: kind), "\(kind)")
        }
        for kind in ["launch", "foreground", "background", "suspend", "resume", "deny", "run-task", "complete-task",
                     "notify", "policy", "coalesced"] {
            #expect(!TaskNotifications.mayChangeTasks(decision: kind), "\(kind)")
        }
    }

    @Test func aLineThisBuildCannotReadStillAsks() {
        #expect(TaskNotifications.mayChangeTasks(decision: "hibernate"))
        #expect(TaskNotifications.mayChangeTasks(decision: nil))
    }
}
