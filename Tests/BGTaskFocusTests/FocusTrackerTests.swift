import BGTaskFocus
import Testing

/// SPEC §13: bgtaskd-focus's debounced front app, time stepped by hand.
@Suite struct FocusTrackerTests {
    let ms: Int64 = 1000

    @Test func aChangeIsToldAfterTheDebounceExactly() {
        var t = FocusTracker(debounceUSec: 300 * ms)
        t.toplevelChanged(1, appID: "org.example.A", activated: true, nowUSec: 0)
        #expect(t.nextDeadlineUSec == 300 * ms)
        #expect(t.deadlineReached(nowUSec: 300 * ms - 1) == nil)
        #expect(t.deadlineReached(nowUSec: 300 * ms) == .setFocus("org.example.A", reason: .compositorFocus))
        #expect(t.nextDeadlineUSec == nil)
    }

    @Test func aQuickSwitchAwayAndBackCostsNothing() {
        var t = FocusTracker(debounceUSec: 300 * ms)
        t.toplevelChanged(1, appID: "org.example.A", activated: true, nowUSec: 0)
        t.toplevelChanged(2, appID: "org.example.B", activated: false, nowUSec: 0)
        _ = t.deadlineReached(nowUSec: 300 * ms)
        // A → B: A deactivated first (nothing activated for a moment), then B activated ...
        t.toplevelChanged(1, appID: "org.example.A", activated: false, nowUSec: 1000 * ms)
        t.toplevelChanged(2, appID: "org.example.B", activated: true, nowUSec: 1000 * ms)
        // ... and back within the debounce.
        t.toplevelChanged(2, appID: "org.example.B", activated: false, nowUSec: 1100 * ms)
        t.toplevelChanged(1, appID: "org.example.A", activated: true, nowUSec: 1100 * ms)
        #expect(t.nextDeadlineUSec == nil)
        #expect(t.deadlineReached(nowUSec: 2000 * ms) == nil)
    }

    @Test func theIntermediateNothingOfASwitchIsNeverTold() {
        var t = FocusTracker(debounceUSec: 300 * ms)
        t.toplevelChanged(1, appID: "org.example.A", activated: true, nowUSec: 0)
        _ = t.deadlineReached(nowUSec: 300 * ms)
        t.toplevelChanged(1, appID: "org.example.A", activated: false, nowUSec: 1000 * ms)
        t.toplevelChanged(2, appID: "org.example.B", activated: true, nowUSec: 1010 * ms)
        #expect(t.nextDeadlineUSec == 1310 * ms)
        #expect(t.deadlineReached(nowUSec: 1310 * ms) == .setFocus("org.example.B", reason: .compositorFocus))
    }

    @Test func homeScreenAndClosingTheFrontAppMeanNoApp() {
        var t = FocusTracker(debounceUSec: 0)
        t.toplevelChanged(1, appID: "org.example.A", activated: true, nowUSec: 0)
        #expect(t.deadlineReached(nowUSec: 0) == .setFocus("org.example.A", reason: .compositorFocus))
        t.toplevelChanged(1, appID: "org.example.A", activated: false, nowUSec: 5)
        #expect(t.deadlineReached(nowUSec: 5) == .setFocus(nil, reason: .compositorFocus))
        t.toplevelChanged(1, appID: "org.example.A", activated: true, nowUSec: 6)
        #expect(t.deadlineReached(nowUSec: 6) == .setFocus("org.example.A", reason: .compositorFocus))
        t.toplevelClosed(1, nowUSec: 7)
        #expect(t.front == nil)
        #expect(t.deadlineReached(nowUSec: 7) == .setFocus(nil, reason: .compositorFocus))
    }

    @Test func theLastActivatedWinsAndEmptyAppIDsDoNotCount() {
        var t = FocusTracker(debounceUSec: 0)
        t.toplevelChanged(1, appID: "org.example.A", activated: true, nowUSec: 0)
        t.toplevelChanged(2, appID: "org.example.B", activated: true, nowUSec: 0)
        #expect(t.front == "org.example.B")
        t.toplevelChanged(3, appID: "", activated: true, nowUSec: 0)
        #expect(t.front == "org.example.B")
    }

    @Test func aFailedCallIsRetried() {
        var t = FocusTracker(debounceUSec: 10)
        t.toplevelChanged(1, appID: "org.example.A", activated: true, nowUSec: 0)
        #expect(t.deadlineReached(nowUSec: 10) == .setFocus("org.example.A", reason: .compositorFocus))
        t.forget(nowUSec: 20)
        #expect(t.deadlineReached(nowUSec: 30) == .setFocus("org.example.A", reason: .compositorFocus))
    }

    @Test func lockingTellsNoAppAtOnceAndUnlockingBringsTheFrontBack() {
        var t = FocusTracker(debounceUSec: 300 * ms)
        t.toplevelChanged(1, appID: "org.example.A", activated: true, nowUSec: 0)
        _ = t.deadlineReached(nowUSec: 300 * ms)
        t.screenLocked(true, nowUSec: 1000 * ms)
        #expect(t.nextDeadlineUSec == 1000 * ms)
        #expect(t.deadlineReached(nowUSec: 1000 * ms) == .setFocus(nil, reason: .screenLocked))
        // Changes while locked are remembered, not told.
        t.toplevelChanged(1, appID: "org.example.A", activated: false, nowUSec: 1100 * ms)
        t.toplevelChanged(2, appID: "org.example.B", activated: true, nowUSec: 1100 * ms)
        #expect(t.nextDeadlineUSec == nil)
        t.screenLocked(false, nowUSec: 2000 * ms)
        #expect(t.deadlineReached(nowUSec: 2000 * ms) == .setFocus("org.example.B", reason: .compositorFocus))
        // A second unlock report changes nothing.
        t.screenLocked(false, nowUSec: 2100 * ms)
        #expect(t.nextDeadlineUSec == nil)
    }

    @Test func theScreenStaysLockedWhileAnySourceSaysSo() {
        var t = FocusTracker(debounceUSec: 300 * ms)
        t.toplevelChanged(1, appID: "org.example.A", activated: true, nowUSec: 0)
        _ = t.deadlineReached(nowUSec: 300 * ms)
        // logind's LockedHint: no app in front, at once.
        t.screen(.sessionLocked, locked: true, nowUSec: 1000 * ms)
        #expect(t.deadlineReached(nowUSec: 1000 * ms) == .setFocus(nil, reason: .screenLocked))
        // The compositor's idle notification as well; then the compositor sees the user again: still locked.
        t.screen(.compositorIdle, locked: true, nowUSec: 1100 * ms)
        t.screen(.compositorIdle, locked: false, nowUSec: 1200 * ms)
        #expect(t.locked && t.lockedBy == [.sessionLocked])
        #expect(t.nextDeadlineUSec == nil)
        // IdleHint comes and the lock goes: still blank.
        t.screen(.sessionIdle, locked: true, nowUSec: 1300 * ms)
        t.screen(.sessionLocked, locked: false, nowUSec: 1400 * ms)
        #expect(t.locked && t.nextDeadlineUSec == nil)
        // The last source clears: the front app comes back at once.
        t.screen(.sessionIdle, locked: false, nowUSec: 1500 * ms)
        #expect(!t.locked)
        #expect(t.deadlineReached(nowUSec: 1500 * ms) == .setFocus("org.example.A", reason: .compositorFocus))
    }
}
