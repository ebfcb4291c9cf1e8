import BGTaskCore
import Testing

/// SPEC §3: the app budget resets when the app returns to the foreground, and only then; a wake for an event
/// (a scheduled task, a remote notification: §2 sequence 5) runs on that event's own budget and leaves the
/// app's as it was. Time stepped by hand.
@Suite struct EventBudgetTests {
    /// Music (fetch, processing, remote-notification) to the background at `h.now`, acknowledged: suspended.
    private func suspendMusic(_ h: inout Harness) -> Instant {
        h.launchActive(music)
        let t0 = h.now
        guard let dib = h.background(music) else {
            Issue.record("no did-enter-background")
            return t0
        }
        h.send(.eventAcknowledged(dib.id))
        #expect(h.state(music) == .suspended)
        return t0
    }

    @Test func aTaskWakeOfAnAppWithItsBudgetSpentGivesNoFreshBudget() {
        var h = Harness()
        let t0 = suspendMusic(&h)
        let wake = h.at(t0 + .minutes(20), .taskRunRequested(music, identifier: "r", kind: .refresh, reason: .userRequest))
        // Sequence 5 as before: thaw, did-enter-background (still to acknowledge in the grace window), the task.
        #expect(wake.thaws == [music])
        #expect(wake.sequence == [Step(.didEnterBackground, .background), Step(.performTask, .background)])
        #expect(wake.events[1].deadline == h.now + .seconds(30))
        // The app's own budget is as spent as it was: nothing left, and an assertion is denied.
        #expect(h.snapshot(music)?.backgroundTimeRemaining == .zero)
        #expect(h.machine.backgroundTimeRemaining(of: music, now: h.now) == .zero)
        let begin = h.send(.assertionRequested(music, connection: connB, name: "after the wake"))
        #expect(begin.replies == [.taskID(.invalid)])
        #expect(begin.decisions(.deny).map(\.reason) == [.budgetExhausted])
        // The task runs on its own budget: acknowledged, it keeps the app running past the app budget's end.
        h.send(.eventAcknowledged(wake.events[0].id))
        let during = h.after(.seconds(29))
        #expect(during.freezes.isEmpty && during.sigterms.isEmpty && h.state(music) == .background)
        let done = h.send(.taskCompleted(music, identifier: "r", success: true))
        #expect(done.freezes == [music])
    }

    @Test func aRemoteNotificationWakeOfAnAppWithItsBudgetSpentGivesNoFreshBudget() {
        var h = Harness()
        let t0 = suspendMusic(&h)
        let wake = h.at(t0 + .seconds(45), .remoteNotificationReceived(music, payload: nil))
        #expect(wake.sequence == [Step(.didEnterBackground, .background), Step(.notification, .background)])
        #expect(h.snapshot(music)?.backgroundTimeRemaining == .zero)
        #expect(h.send(.assertionRequested(music, connection: connB, name: nil)).replies == [.taskID(.invalid)])
        // The wake window (RefreshTaskBudgetSec) is the event's own; its end suspends the app once acknowledged.
        h.send(.eventAcknowledged(wake.events[0].id))
        #expect(h.after(.seconds(30) - .oneMicrosecond).freezes.isEmpty)
        #expect(h.after(.oneMicrosecond).freezes == [music])
    }

    @Test func aWakeKeepsWhatWasLeftAndTheBudgetEndsWhereItAlwaysWould() {
        var h = Harness()
        let t0 = suspendMusic(&h)
        let wake = h.at(t0 + .seconds(10), .remoteNotificationReceived(music, payload: nil))
        h.send(.eventAcknowledged(wake.events[0].id))
        #expect(h.snapshot(music)?.backgroundTimeRemaining == .seconds(20))
        // An assertion begun during the wake lives on the 20 s left: warned at 25 s, terminated at 30 s.
        let task = h.begin(music, on: connB, name: "upload")
        #expect(task != .invalid)
        #expect(h.at(t0 + .seconds(25) - .oneMicrosecond).events.isEmpty)
        let warning = h.at(t0 + .seconds(25))
        #expect(warning.events.map(\.kind) == [.backgroundTaskWillExpire])
        #expect(warning.events.first?.deadline == t0 + .seconds(30))
        #expect(h.at(t0 + .seconds(30) - .oneMicrosecond).sigterms.isEmpty)
        let end = h.at(t0 + .seconds(30))
        #expect(end.decisions(.terminate).first?.reason == .expirationNotHandled)
    }

    @Test func theGraceWindowStillAppliesToAWakeWithTheBudgetSpent() {
        var h = Harness()
        let t0 = suspendMusic(&h)
        let wake = h.at(t0 + .minutes(5), .taskRunRequested(music, identifier: "p", kind: .processing, reason: .taskScheduled))
        #expect(wake.events.first?.kind == .didEnterBackground && wake.events.first?.needsAck == true)
        #expect(wake.events.first?.deadline == h.now + .seconds(5))
        // The spent budget ends nothing by itself (no assertion is live); the unacknowledged event does.
        #expect(h.after(.seconds(5) - .oneMicrosecond).sigterms.isEmpty)
        let late = h.after(.oneMicrosecond)
        #expect(late.decisions(.terminate).first?.reason == .didEnterBackgroundTimeout)
    }

    @Test func aLaunchIntoTheBackgroundIsANewProcessWithAFullBudget() {
        var h = Harness()
        let t0 = suspendMusic(&h)
        h.at(t0 + .minutes(1), .terminateRequested(music))
        h.send(.processExited(music, pid: 100))
        #expect(h.state(music) == .notRunning)
        h.after(.seconds(1), .taskRunRequested(music, identifier: "r", kind: .refresh, reason: .taskScheduled))
        h.send(.appLaunched(music, pid: 101))
        let checkIn = h.send(.appCheckedIn(music, connection: connC, pid: 101))
        #expect(checkIn.sequence.map(\.kind) == [.didFinishLaunching, .didEnterBackground, .performTask])
        #expect(h.snapshot(music)?.backgroundTimeRemaining == .seconds(30))
    }

    @Test func onlyTheForegroundResetsTheBudgetAfterAWake() {
        var h = Harness()
        let t0 = suspendMusic(&h)
        let wake = h.at(t0 + .minutes(2), .remoteNotificationReceived(music, payload: nil))
        h.send(.eventAcknowledged(wake.events[0].id))
        #expect(h.snapshot(music)?.backgroundTimeRemaining == .zero)
        h.after(.seconds(1), .foregroundRequested(music, exclusive: true))
        #expect(h.snapshot(music)?.backgroundTimeRemaining == nil)
        _ = h.background(music)
        #expect(h.snapshot(music)?.backgroundTimeRemaining == .seconds(30))
    }

    // MARK: Other ways the budget is spent (SPEC §3 with §12's manager hold, a reload)

    @Test func anAssertionThatOutlivesItsBudgetUnderAManagerHoldEndsTheAppWhenTheHoldEnds() {
        var h = Harness()
        h.launchActive(mail)
        let upload = h.begin(mail, on: connA, name: "upload")
        let t0 = h.now
        guard let dib = h.background(mail) else { return #expect(Bool(false), "no did-enter-background") }
        h.send(.eventAcknowledged(dib.id))
        h.after(.seconds(1), .holdRequested(mail, connection: connC, name: "sleep 60"))
        // The app's assertion is warned as always; while held, the budget's end terminates nothing (§12).
        #expect(h.at(t0 + .seconds(25)).events.map(\.taskID) == [upload])
        #expect(h.at(t0 + .seconds(30)).sigterms.isEmpty && h.state(mail) == .background)
        // The hold ends (its command exits) at 40 s: the assertion is 10 s past the app's budget, so the rule
        // of §3 applies now (before the fix it lived on with no budget at all).
        let released = h.at(t0 + .seconds(40), .connectionClosed(connC))
        #expect(released.decisions(.end).map(\.reason) == [.managerHold])
        #expect(released.decisions(.terminate).map(\.reason) == [.expirationNotHandled])
        #expect(h.snapshot(mail)?.terminating == true)
    }

    @Test func aHoldThatEndsWithBudgetLeftLeavesTheBudgetAsItWas() {
        var h = Harness()
        h.launchActive(mail)
        let upload = h.begin(mail, on: connA, name: "upload")
        let t0 = h.now
        guard let dib = h.background(mail) else { return #expect(Bool(false), "no did-enter-background") }
        h.send(.eventAcknowledged(dib.id))
        h.after(.seconds(1), .holdRequested(mail, connection: connC, name: nil))
        let released = h.at(t0 + .seconds(10), .connectionClosed(connC))
        #expect(released.sigterms.isEmpty && released.decisions(.terminate).isEmpty)
        #expect(h.snapshot(mail)?.backgroundTimeRemaining == .seconds(20))
        #expect(h.at(t0 + .seconds(25)).events.map(\.taskID) == [upload])
        #expect(h.at(t0 + .seconds(30)).decisions(.terminate).map(\.reason) == [.expirationNotHandled])
    }

    @Test func aReloadedBudgetIsTheOneTheAppIsToldAndTheOneThatEnds() {
        var h = Harness()
        h.launchActive(mail)
        _ = h.begin(mail, on: connA, name: "upload")
        let t0 = h.now
        guard let dib = h.background(mail) else { return #expect(Bool(false), "no did-enter-background") }
        h.send(.eventAcknowledged(dib.id))
        // BackgroundTimeBudgetSec=30s becomes 60s at 10 s: 50 s are left, and the budget ends at 60 s, not 30 s.
        h.at(t0 + .seconds(10), .configurationChanged(LifecycleConfig(backgroundTimeBudget: .seconds(60))))
        #expect(h.snapshot(mail)?.backgroundTimeRemaining == .seconds(50))
        #expect(h.at(t0 + .seconds(30)).sigterms.isEmpty && h.snapshot(mail)?.terminating == false)
        #expect(h.at(t0 + .seconds(55)).events.map(\.kind) == [.backgroundTaskWillExpire])
        #expect(h.at(t0 + .seconds(60)).decisions(.terminate).map(\.reason) == [.expirationNotHandled])
    }

    @Test func aReloadThatShortensTheBudgetBelowWhatIsSpentEndsItAtOnce() {
        var h = Harness()
        h.launchActive(mail)
        _ = h.begin(mail, on: connA, name: "upload")
        let t0 = h.now
        guard let dib = h.background(mail) else { return #expect(Bool(false), "no did-enter-background") }
        h.send(.eventAcknowledged(dib.id))
        let reload = h.at(t0 + .seconds(12), .configurationChanged(LifecycleConfig(backgroundTimeBudget: .seconds(10))))
        #expect(h.snapshot(mail)?.backgroundTimeRemaining == .zero || h.snapshot(mail)?.terminating == true)
        #expect(reload.decisions(.terminate).map(\.reason) == [.expirationNotHandled])
    }
}
