import BGTaskFocus
import Testing

/// SPEC §16: bgtaskd-focus's notifications of continued tasks, pure.
@Suite struct TaskNotificationsTests {
    typealias T = TaskNotifications.Task

    @Test func aNewTaskIsShownWithItsProgressThenUpdatedInPlace() {
        var n = TaskNotifications()
        let task = T(appID: "org.example.Photos", taskID: 7, title: "Export", subtitle: "3 photos", completedUnits: 1, totalUnits: 4)
        let first = n.update([task], names: ["org.example.Photos": "Photos"])
        let content = TaskNotifications.Content(appName: "Photos", summary: "Export", body: "3 photos — 25%", percent: 25)
        #expect(first == [.show(task.key, content, replacing: nil)])
        n.shown(task.key, id: 42)
        // Unchanged: nothing; progress: the same notification (replaces_id 42).
        #expect(n.update([task], names: ["org.example.Photos": "Photos"]).isEmpty)
        var more = task
        more.completedUnits = 3
        let second = n.update([more], names: ["org.example.Photos": "Photos"])
        #expect(second == [.show(task.key, .init(appName: "Photos", summary: "Export", body: "3 photos — 75%", percent: 75), replacing: 42)])
        #expect(n.update([more], names: ["org.example.Photos": "Photos"]).isEmpty)
        #expect(n.task(forNotification: 42) == task.key)
    }

    @Test func aTaskThatEndsHasItsNotificationClosed() {
        var n = TaskNotifications()
        let a = T(appID: "A", taskID: 1, title: "a", completedUnits: 0, totalUnits: 10)
        let b = T(appID: "B", taskID: 2, title: "b")
        _ = n.update([a, b])
        n.shown(a.key, id: 5)
        n.shown(b.key, id: 6)
        #expect(n.update([b]) == [.close(a.key, id: 5)])
        #expect(n.task(forNotification: 5) == nil)
        #expect(n.update([]) == [.close(b.key, id: 6)])
        #expect(n.update([]).isEmpty)
    }

    @Test func withoutAServerNothingIsCalledForAMinuteAndNothingIsClosed() {
        var n = TaskNotifications()
        var a = T(appID: "A", taskID: 1, title: "a", completedUnits: 2)
        #expect(n.update([a], nowUSec: 1_000).count == 1)
        n.shown(a.key, id: 0, nowUSec: 1_000)
        #expect(n.retryAtUSec == 60_001_000)
        // Progress meanwhile: no call; a minute later: tried again.
        a.completedUnits = 3
        #expect(n.update([a], nowUSec: 60_000_999).isEmpty)
        #expect(n.update([a], nowUSec: 60_001_000).count == 1)
        #expect(n.retryAtUSec == nil)
        n.shown(a.key, id: 0, nowUSec: 60_001_000)
        #expect(n.update([], nowUSec: 200_000_000).isEmpty)
    }

    @Test func aServerThatComesIsCalledNoSoonerThanFiveSecondsAfterTheFailure() {
        var n = TaskNotifications()
        let a = T(appID: "A", taskID: 1, title: "a", completedUnits: 2, totalUnits: 4)
        _ = n.update([a], nowUSec: 0)
        n.shown(a.key, id: 0, nowUSec: 0)
        // An activated server took the name (and died): not called again before 5 s.
        n.server(present: true)
        n.server(present: false)
        n.server(present: true)
        #expect(n.retryAtUSec == 5_000_000)
        #expect(n.update([a], nowUSec: 4_999_999).isEmpty)
        #expect(n.update([a], nowUSec: 5_000_000) == [.show(a.key, TaskNotifications.content(a, name: nil), replacing: nil)])
        n.shown(a.key, id: 3, nowUSec: 5_000_000)
        // The server goes and another comes: shown afresh (the old id is gone with the old server).
        n.server(present: false)
        n.server(present: true)
        #expect(n.retryAtUSec == nil)
        #expect(n.update([a], nowUSec: 6_000_000) == [.show(a.key, TaskNotifications.content(a, name: nil), replacing: nil)])
    }

    @Test func aNotificationTheUserDismissedIsNotShownAgainForThatTask() {
        var n = TaskNotifications()
        var a = T(appID: "A", taskID: 1, title: "a", completedUnits: 1, totalUnits: 10)
        _ = n.update([a])
        n.shown(a.key, id: 9)
        n.closed(9)
        a.completedUnits = 5
        #expect(n.update([a]).isEmpty)
        #expect(n.update([]).isEmpty)
        // Another task of the same app is shown.
        let b = T(appID: "A", taskID: 2, title: "b")
        #expect(n.update([b]).count == 1)
    }

    @Test func theBodySaysTheProgressAndTheValueHintIsClamped() {
        #expect(TaskNotifications.content(T(appID: "A", taskID: 1, title: "t", completedUnits: 3), name: nil).body == "3 done")
        #expect(TaskNotifications.content(T(appID: "A", taskID: 1, title: "t", completedUnits: 3, totalUnits: 0), name: nil).body == "0%")
        let over = TaskNotifications.content(T(appID: "A", taskID: 1, title: "t", subtitle: "", completedUnits: 30, totalUnits: 10), name: "")
        #expect(over.percent == 100 && over.body == "100%" && over.appName == "A")
    }
}
