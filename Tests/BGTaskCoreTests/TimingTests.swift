import BGTaskCore
import Testing

/// Every timing rule of SPEC §3 at its boundary: nothing 1 µs before, the action exactly at the instant.
@Suite struct TimingTests {
    @Test func unacknowledgedDidEnterBackgroundTerminatesAtExactlyTheTimeout() {
        var h = Harness()
        h.launchActive(mail)
        let t0 = h.now
        _ = h.background(mail)
        #expect(h.machine.nextDeadline == t0 + .seconds(5))
        #expect(h.at(t0 + .seconds(5) - .oneMicrosecond).isEmpty)  // 4.999999 s
        #expect(h.state(mail) == .background)
        #expect(h.snapshot(mail)?.terminating == false)
        let timeout = h.at(t0 + .seconds(5))
        #expect(timeout.sequence == [Step(.willTerminate, .background)])
        let decision = timeout.decisions(.terminate).first
        #expect(decision?.reason == .didEnterBackgroundTimeout)
        #expect(h.snapshot(mail)?.terminationReason == .didEnterBackgroundTimeout)
    }

    @Test func acknowledgementJustInTimeSuspends() {
        var h = Harness()
        h.launchActive(mail)
        let t0 = h.now
        guard let dib = h.background(mail) else { return #expect(Bool(false)) }
        let ack = h.at(t0 + .seconds(5) - .oneMicrosecond, .eventAcknowledged(dib.id))
        #expect(ack.freezes == [mail])
        #expect(h.state(mail) == .suspended)
    }

    @Test func lateAcknowledgementLosesToTheDeadline() {
        // The timer fired late, the ack got in first: the deadline is still applied first, at its own instant.
        var h = Harness()
        h.launchActive(mail)
        let t0 = h.now
        guard let dib = h.background(mail) else { return #expect(Bool(false)) }
        let ack = h.at(t0 + .seconds(5), .eventAcknowledged(dib.id))
        #expect(ack.freezes.isEmpty)
        #expect(ack.decisions(.terminate).first?.reason == .didEnterBackgroundTimeout)
        #expect(ack.replies == [.ok])
    }

    @Test func earlyAndLateDeadlineReachedAreHarmless() {
        var h = Harness()
        h.launchActive(mail)
        let t0 = h.now
        _ = h.background(mail)
        // Early wake-ups change nothing.
        #expect(h.at(t0 + .seconds(1)).isEmpty)
        #expect(h.at(t0 + .seconds(4)).isEmpty)
        // One very late wake-up applies everything due, each at its own instant, nothing more.
        let late = h.at(t0 + .seconds(60))
        #expect(late.sequence == [Step(.willTerminate, .background)])
        #expect(late.events.first?.deadline == t0 + .seconds(10))
        #expect(late.sigterms == [mail])
        #expect(late.kills == [mail])
        #expect(h.machine.nextDeadline == nil)
        #expect(h.at(t0 + .seconds(61)).isEmpty)
    }

    @Test func timeNeverGoesBackwards() {
        var h = Harness()
        h.launchActive(mail)
        let t0 = h.now
        _ = h.background(mail)
        h.at(t0 + .seconds(5))
        #expect(h.snapshot(mail)?.terminating == true)
        // An earlier instant is treated as the latest seen: nothing is undone or repeated.
        #expect(h.at(t0).isEmpty)
    }

    @Test func budgetWarningsAndExpirationAtTheirInstants() {
        var h = Harness()
        h.launchActive(mail)
        let first = h.begin(mail, name: "upload")
        let second = h.begin(mail, name: "index")
        let t0 = h.now
        guard let dib = h.background(mail) else { return #expect(Bool(false)) }
        h.send(.eventAcknowledged(dib.id))
        #expect(h.state(mail) == .background)
        #expect(h.at(t0 + .seconds(25) - .oneMicrosecond).isEmpty)
        let warning = h.at(t0 + .seconds(25))
        #expect(warning.events.map { $0.kind } == [.backgroundTaskWillExpire, .backgroundTaskWillExpire])
        #expect(warning.events.map { $0.taskID } == [first, second])
        #expect(warning.events.map { $0.taskName } == ["upload", "index"])
        #expect(warning.events.allSatisfy { $0.deadline == t0 + .seconds(30) })
        #expect(warning.decisions(.expire).map { $0.reason } == [.budgetEnding, .budgetEnding])
        #expect(h.machine.assertions(now: h.now).allSatisfy { $0.expiring })
        #expect(h.at(t0 + .seconds(30) - .oneMicrosecond).isEmpty)
        let end = h.at(t0 + .seconds(30))
        #expect(end.sequence == [Step(.willTerminate, .background)])
        #expect(end.decisions(.terminate).first?.reason == .expirationNotHandled)
    }

    @Test func endingTheLastAssertionInTheBackgroundSuspendsAtOnce() {
        var h = Harness()
        h.launchActive(mail)
        let a = h.begin(mail)
        let b = h.begin(mail)
        guard let dib = h.background(mail) else { return #expect(Bool(false)) }
        h.send(.eventAcknowledged(dib.id))
        #expect(h.after(.seconds(3), .assertionEndRequested(mail, a)).freezes.isEmpty)
        let last = h.after(.seconds(1), .assertionEndRequested(mail, b))
        #expect(last.freezes == [mail])
        #expect(last.decisions(.suspend).first?.reason == .noAssertions)
        #expect(h.machine.nextDeadline == nil)
    }

    @Test func endingTheLastAssertionBeforeTheAcknowledgementWaitsForIt() {
        var h = Harness()
        h.launchActive(mail)
        let a = h.begin(mail)
        guard let dib = h.background(mail) else { return #expect(Bool(false)) }
        #expect(h.send(.assertionEndRequested(mail, a)).freezes.isEmpty)
        #expect(h.state(mail) == .background)
        #expect(h.send(.eventAcknowledged(dib.id)).freezes == [mail])
    }

    @Test func budgetIsSharedByAllAssertionsAndCountsFromEnteringTheBackground() {
        var h = Harness()
        h.launchActive(mail)
        _ = h.begin(mail)
        let t0 = h.now
        guard let dib = h.background(mail) else { return #expect(Bool(false)) }
        h.send(.eventAcknowledged(dib.id))
        h.at(t0 + .seconds(12))
        let late = h.begin(mail)
        #expect(late.isValid)
        let remaining = h.machine.assertions(now: h.now).map { $0.remaining }
        #expect(remaining == [.seconds(18), .seconds(18)])
        #expect(h.machine.backgroundTimeRemaining(of: mail, now: h.now) == .seconds(18))
        // The late assertion expires with the app's budget, not 30 s after its own begin.
        let warning = h.at(t0 + .seconds(25))
        #expect(warning.events.count == 2)
        #expect(h.at(t0 + .seconds(30)).decisions(.terminate).first?.reason == .expirationNotHandled)
    }

    @Test func budgetResetsInTheForeground() {
        var h = Harness()
        h.launchActive(mail)
        _ = h.begin(mail)
        let t0 = h.now
        guard let dib = h.background(mail) else { return #expect(Bool(false)) }
        h.send(.eventAcknowledged(dib.id))
        h.at(t0 + .seconds(26))  // warned
        #expect(h.machine.assertions(now: h.now).first?.expiring == true)
        h.at(t0 + .seconds(27), .foregroundRequested(mail, exclusive: true))
        #expect(h.machine.backgroundTimeRemaining(of: mail, now: h.now) == nil)
        #expect(h.machine.assertions(now: h.now).first?.remaining == nil)
        #expect(h.machine.assertions(now: h.now).first?.expiring == false)
        // In the foreground, time does not count: nothing happens at the old budget end.
        #expect(h.at(t0 + .seconds(100)).isEmpty)
        let t1 = h.now
        guard let dib2 = h.background(mail) else { return #expect(Bool(false)) }
        h.send(.eventAcknowledged(dib2.id))
        #expect(h.machine.backgroundTimeRemaining(of: mail, now: h.now) == .seconds(30))
        #expect(h.at(t1 + .seconds(25) - .oneMicrosecond).isEmpty)
        #expect(h.at(t1 + .seconds(25)).events.map { $0.kind } == [.backgroundTaskWillExpire])
    }

    @Test func beginAfterTheWarningPointIsWarnedAtOnce() {
        var h = Harness()
        h.launchActive(music)
        _ = h.begin(music)
        let t0 = h.now
        guard let dib = h.background(music) else { return #expect(Bool(false)) }
        h.send(.eventAcknowledged(dib.id))
        h.at(t0 + .seconds(27))
        let actions = h.send(.assertionRequested(music, connection: connA, name: "late"))
        guard case .reply(.taskID(let late), _)? = actions.first(where: { if case .reply = $0 { true } else { false } }) else {
            return #expect(Bool(false))
        }
        #expect(late.isValid)
        #expect(actions.events.map { $0.kind } == [.backgroundTaskWillExpire])
        #expect(actions.events.first?.taskID == late)
    }

    @Test func launchTimeoutForAppsThatDoNotCheckIn() {
        var h = Harness()
        let t0 = h.now
        h.send(.launchRequested(mail, background: false, exclusive: true))
        h.send(.appLaunched(mail, pid: 77))
        #expect(h.machine.nextDeadline == t0 + .seconds(20))
        #expect(h.at(t0 + .seconds(20) - .oneMicrosecond).isEmpty)
        let timeout = h.at(t0 + .seconds(20))
        // Never checked in: no event stream, so SIGTERM then SIGKILL.
        #expect(timeout.sigterms == [mail])
        #expect(timeout.decisions(.terminate).first?.reason == .launchTimeout)
        #expect(h.at(t0 + .seconds(25)).kills == [mail])
        h.send(.processExited(mail, pid: 77))
        #expect(h.state(mail) == .notRunning)
        #expect(h.snapshot(mail)?.launching == false)
    }

    @Test func checkingInJustBeforeTheLaunchTimeoutIsInTime() {
        var h = Harness()
        let t0 = h.now
        h.send(.launchRequested(mail, background: false, exclusive: true))
        h.send(.appLaunched(mail, pid: 77))
        let checkIn = h.at(t0 + .seconds(20) - .oneMicrosecond, .appCheckedIn(mail, connection: connA, pid: 77))
        #expect(checkIn.events.count == 2)
        #expect(h.at(t0 + .seconds(30)).isEmpty)
        #expect(h.state(mail) == .active)
    }

    @Test func closedEventStreamMustCheckInAgainWithinTheLaunchTimeout() {
        var h = Harness()
        h.launchActive(mail)
        let t0 = h.now
        h.send(.connectionClosed(connA))
        #expect(h.state(mail) == .active)
        #expect(h.machine.nextDeadline == t0 + .seconds(20))
        // Checking in again cancels it, without replaying the launch.
        let again = h.at(t0 + .seconds(10), .appCheckedIn(mail, connection: connB, pid: nil))
        #expect(again.replies == [.checkedIn(state: .active)])
        #expect(again.events.isEmpty)
        #expect(h.machine.nextDeadline == nil)
        // A second disconnect without check-in: launch-timeout.
        let t1 = h.now
        h.send(.connectionClosed(connB))
        #expect(h.at(t1 + .seconds(20)).decisions(.terminate).first?.reason == .launchTimeout)
    }

    @Test func lifecycleUnawareAppIsFrozenAtTheEndOfTheGraceWindow() {
        var h = Harness()
        h.send(.launchRequested(terminal, background: false, exclusive: true))
        h.send(.appLaunched(terminal, pid: 500))
        let t0 = h.now
        let bg = h.send(.backgroundRequested(terminal))
        #expect(bg.events.isEmpty)
        #expect(h.state(terminal) == .background)
        #expect(h.at(t0 + .seconds(5) - .oneMicrosecond).isEmpty)
        let end = h.at(t0 + .seconds(5))
        #expect(end.freezes == [terminal])
        #expect(end.decisions(.suspend).first?.reason == .noAssertions)
        #expect(end.sigterms.isEmpty && end.kills.isEmpty)
    }

    @Test func lifecycleUnawareAppHeldByAnAssertionKeepsRunning() {
        var h = Harness()
        h.send(.launchRequested(terminal, background: false, exclusive: true))
        h.send(.appLaunched(terminal, pid: 500))
        let t0 = h.now
        h.send(.backgroundRequested(terminal))
        // `bgtaskctl hold --app`: another client holds an assertion for it.
        let hold = h.at(t0 + .seconds(2), .assertionRequested(terminal, connection: connC, name: "hold"))
        guard case .reply(.taskID(let task), _)? = hold.last else { return #expect(Bool(false)) }
        #expect(h.at(t0 + .seconds(5)).freezes.isEmpty)
        #expect(h.state(terminal) == .background)
        // Warnings cannot be delivered to it, but are recorded.
        let warning = h.at(t0 + .seconds(25))
        #expect(warning.events.isEmpty)
        #expect(warning.decisions(.expire).first?.taskID == task)
        #expect(h.at(t0 + .seconds(26), .connectionClosed(connC)).freezes == [terminal])
    }

    @Test func scheduledTaskBudgets() {
        for (kind, budget) in [(TaskKind.refresh, TimeSpan.seconds(30)), (.processing, .minutes(5))] {
            var h = Harness()
            h.launchActive(music)
            guard let dib = h.background(music) else { return #expect(Bool(false)) }
            h.send(.eventAcknowledged(dib.id))
            let t0 = h.now
            let run = h.send(.taskRunRequested(music, identifier: "t", kind: kind, reason: .userRequest))
            #expect(run.sequence == [Step(.didEnterBackground, .background), Step(.performTask, .background)])
            h.send(.eventAcknowledged(run.events[0].id))
            // The app's own budget does not stop a task (only assertions expire with it).
            #expect(h.at(t0 + budget - .seconds(5) - .oneMicrosecond).events.isEmpty)
            let warning = h.at(t0 + budget - .seconds(5))
            #expect(warning.sequence == [Step(.backgroundTaskWillExpire, .background)])
            #expect(warning.events.first?.identifier == "t")
            #expect(warning.events.first?.deadline == t0 + budget)
            #expect(h.at(t0 + budget - .oneMicrosecond).isEmpty)
            let end = h.at(t0 + budget)
            #expect(end.sequence == [Step(.willTerminate, .background)])
            #expect(end.decisions(.terminate).first?.reason == .taskNotCompleted)
        }
    }

    @Test func configuredTimingsAreUsed() {
        let config = LifecycleConfig(
            didEnterBackgroundTimeout: .milliseconds(100), backgroundTimeBudget: .milliseconds(300),
            expirationWarning: .milliseconds(50))
        var h = Harness(config: config)
        h.launchActive(mail)
        _ = h.begin(mail)
        let t0 = h.now
        guard let dib = h.background(mail) else { return #expect(Bool(false)) }
        #expect(dib.deadline == t0 + .milliseconds(100))
        h.send(.eventAcknowledged(dib.id))
        #expect(h.at(t0 + .milliseconds(250)).events.map { $0.kind } == [.backgroundTaskWillExpire])
        #expect(h.at(t0 + .milliseconds(300)).decisions(.terminate).first?.reason == .expirationNotHandled)
    }
}
