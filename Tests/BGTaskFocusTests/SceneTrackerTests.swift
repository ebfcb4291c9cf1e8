import BGTaskFocus
import Testing

/// SPEC §15: bgtaskd-focus's toplevels as scenes, pure (time stepped by hand).
@Suite struct SceneTrackerTests {
    func states(_ r: [SceneTracker.Report]) -> [String] { r.map { "\($0.appID) \($0.sceneID) \($0.state)" } }

    @Test func everyToplevelIsASceneAfterTheDebounce() {
        var t = SceneTracker(debounceUSec: 300)
        t.toplevelChanged(1, appID: "A", title: "one", output: "HDMI-A-1", activated: false, minimized: false, nowUSec: 0)
        t.toplevelChanged(2, appID: "A", title: "two", output: nil, activated: true, minimized: false, nowUSec: 100)
        t.toplevelChanged(3, appID: "B", title: "", output: nil, activated: false, minimized: true, nowUSec: 100)
        #expect(t.nextDeadlineUSec == 400)
        #expect(t.deadlineReached(nowUSec: 399).isEmpty)
        let r = t.deadlineReached(nowUSec: 400)
        // B leaves first; A's scene in front before its other one (A never passes through the background).
        #expect(states(r) == ["B toplevel-3 background", "A toplevel-2 foreground-active", "A toplevel-1 background"])
        #expect(r.last?.title == "one" && r.last?.output == "HDMI-A-1")
        for report in r { t.told(report) }
        // Told: nothing again until something changes; a switch away and back within the debounce costs nothing.
        t.toplevelChanged(2, appID: "A", title: "two", output: nil, activated: false, minimized: false, nowUSec: 500)
        t.toplevelChanged(2, appID: "A", title: "two", output: nil, activated: true, minimized: false, nowUSec: 600)
        #expect(t.deadlineReached(nowUSec: 900).isEmpty)
    }

    @Test func desktopsCountVisibleWindowsInactiveAndClosedOnesDisconnect() {
        var t = SceneTracker(debounceUSec: 0, unfocused: .inactive)
        t.toplevelChanged(1, appID: "A", title: "", output: nil, activated: false, minimized: false, nowUSec: 0)
        t.toplevelChanged(2, appID: "A", title: "", output: nil, activated: false, minimized: true, nowUSec: 0)
        let r = t.deadlineReached(nowUSec: 0)
        #expect(states(r) == ["A toplevel-1 foreground-inactive", "A toplevel-2 background"])
        for report in r { t.told(report) }
        t.toplevelClosed(1, nowUSec: 10)
        t.toplevelClosed(9, nowUSec: 10)  // never seen: nothing
        #expect(states(t.deadlineReached(nowUSec: 10)) == ["A toplevel-1 disconnected"])
    }

    /// A compositor that keeps a window's activated flag while it minimizes it: minimized wins (a minimized
    /// window is not in front, whatever else the compositor says).
    @Test func aMinimizedWindowIsInTheBackgroundEvenIfStillMarkedActivated() {
        var t = SceneTracker(debounceUSec: 0)
        t.toplevelChanged(1, appID: "A", title: "", output: nil, activated: true, minimized: true, nowUSec: 0)
        #expect(states(t.deadlineReached(nowUSec: 0)) == ["A toplevel-1 background"])
    }

    @Test func lockedNothingIsToldUnlockedEverythingIs() {
        var t = SceneTracker(debounceUSec: 100)
        t.toplevelChanged(1, appID: "A", title: "", output: nil, activated: true, minimized: false, nowUSec: 0)
        for report in t.deadlineReached(nowUSec: 100) { t.told(report) }
        t.screen(locked: true, nowUSec: 200)
        t.toplevelChanged(1, appID: "A", title: "x", output: nil, activated: true, minimized: false, nowUSec: 210)
        #expect(t.nextDeadlineUSec == nil && t.deadlineReached(nowUSec: 1000).isEmpty)
        t.screen(locked: false, nowUSec: 2000)
        #expect(states(t.deadlineReached(nowUSec: 2000)) == ["A toplevel-1 foreground-active"])
    }

    @Test func aWindowOfAnAppNotRunningYetIsToldAgainBoundedly() {
        var t = SceneTracker(debounceUSec: 0)
        t.toplevelChanged(1, appID: "A", title: "", output: nil, activated: true, minimized: false, nowUSec: 0)
        var now: Int64 = 0
        var sent = 0
        while let due = t.nextDeadlineUSec, sent < 100 {
            now = due
            for report in t.deadlineReached(nowUSec: now) {
                sent += 1
                t.refused(report, nowUSec: now)  // InvalidState: the app has not checked in
            }
        }
        #expect(sent == SceneTracker.retryLimit)
        #expect(now == Int64(SceneTracker.retryLimit - 1) * SceneTracker.retryUSec)
        // Accepted on a later try: told, nothing more.
        var u = SceneTracker(debounceUSec: 0)
        u.toplevelChanged(1, appID: "A", title: "", output: nil, activated: true, minimized: false, nowUSec: 0)
        for r in u.deadlineReached(nowUSec: 0) { u.refused(r, nowUSec: 0) }
        #expect(u.deadlineReached(nowUSec: SceneTracker.retryUSec - 1).isEmpty)
        for r in u.deadlineReached(nowUSec: SceneTracker.retryUSec) { u.told(r) }
        #expect(u.nextDeadlineUSec == nil)
    }

    @Test func appsTheDaemonDoesNotManageAreLeftAlone() {
        var t = SceneTracker(debounceUSec: 0)
        t.toplevelChanged(1, appID: "shell", title: "", output: nil, activated: true, minimized: false, nowUSec: 0)
        t.toplevelChanged(2, appID: "", title: "", output: nil, activated: false, minimized: false, nowUSec: 0)
        #expect(states(t.deadlineReached(nowUSec: 0)) == ["shell toplevel-1 foreground-active"])
        t.ignore("shell")
        t.forget(nowUSec: 0)
        #expect(t.deadlineReached(nowUSec: 0).isEmpty)
    }
}
