import BGTaskCore
import Testing

/// issue 12: budgets (SPEC §3), tasks that wait for the background (SPEC §6), the manager hold (SPEC §12)
/// and the stop sequence (SPEC §9), with time stepped by hand.
@Suite struct HonestAnswersTests {
    /// Sends mail to the background at `h.now` and acknowledges at once: suspended, budget counting from then.
    private func suspendMail(_ h: inout Harness) -> Instant {
        h.launchActive(mail)
        let t0 = h.now
        guard let dib = h.background(mail) else {
            Issue.record("no did-enter-background")
            return t0
        }
        h.send(.eventAcknowledged(dib.id))
        #expect(h.state(mail) == .suspended)
        return t0
    }

    @Test func resumingASuspendedAppForAnAssertionKeepsItsBudget() {
        var h = Harness()
        let t0 = suspendMail(&h)
        // 10 s after entering the background, 20 s are left: the resume must not give 30 s again.
        let begin = h.at(t0 + .seconds(10), .assertionRequested(mail, connection: connB, name: "late"))
        #expect(begin.thaws == [mail])
        #expect(h.snapshot(mail)?.backgroundTimeRemaining == .seconds(20))
        // The budget ends where it always would have: 30 s after entering the background.
        #expect(h.at(t0 + .seconds(30) - .oneMicrosecond).sigterms.isEmpty && h.state(mail) == .background)
        let end = h.at(t0 + .seconds(30))
        #expect(end.decisions(.terminate).first?.reason == .expirationNotHandled)
    }

    @Test func aSuspendedAppWithItsBudgetSpentIsDeniedLikeABackgroundOne() {
        var h = Harness()
        let t0 = suspendMail(&h)
        let begin = h.at(t0 + .seconds(30), .assertionRequested(mail, connection: connB, name: "late"))
        #expect(begin.replies == [.taskID(.invalid)])
        #expect(begin.thaws.isEmpty)
        #expect(begin.decisions(.deny).first?.reason == .budgetExhausted)
        #expect(h.state(mail) == .suspended)
        // The foreground, and only it, resets the budget.
        h.after(.seconds(1), .foregroundRequested(mail, exclusive: true))
        _ = h.background(mail)
        #expect(h.snapshot(mail)?.backgroundTimeRemaining == .seconds(30))
    }

    @Test func aTaskThatFallsDueInTheForegroundWaitsForTheBackground() {
        var h = Harness()
        h.launchActive(music)
        let due = h.send(.taskRunRequested(music, identifier: "r", kind: .refresh, reason: .taskScheduled))
        #expect(due.replies == [.ok])
        #expect(due.events.isEmpty, "\(due.sequence)")
        #expect(due.decisions(.runTask).first?.reason == .waitingForBackground)
        #expect(h.snapshot(music)?.runningTasks.isEmpty == true)
        // Interrupted (inactive) is still the foreground.
        #expect(h.after(.seconds(1), .interruptionBegan(music)).events.map(\.kind) == [.willResignActive])
        #expect(h.after(.seconds(1), .interruptionEnded(music)).events.map(\.kind) == [.didBecomeActive])
        // Due again meanwhile: still one waiting task, not two.
        h.send(.taskRunRequested(music, identifier: "r", kind: .refresh, reason: .taskScheduled))
        let background = h.after(.seconds(1), .backgroundRequested(music))
        #expect(background.sequence == [
            Step(.willResignActive, .inactive), Step(.didEnterBackground, .background), Step(.performTask, .background),
        ])
        #expect(background.decisions(.runTask).map(\.reason) == [.taskScheduled])
        #expect(h.snapshot(music)?.runningTasks.map(\.identifier) == ["r"])
    }

    @Test func aManagerHoldKeepsAnUnawareAppRunningWithoutABudget() {
        var h = Harness()
        h.launchActive(terminal)
        _ = h.background(terminal)
        let t0 = h.now
        let hold = h.after(.seconds(1), .holdRequested(terminal, connection: connB, name: "sleep 40"))
        guard case .holdID(let task)? = hold.replies.first, task != .invalid else {
            return #expect(Bool(false), "\(hold.replies)")
        }
        #expect(hold.decisions(.grant).first?.reason == .managerHold)
        #expect(h.snapshot(terminal)?.assertions.first?.managerHold == true)
        // Past the grace window and far past the 30 s budget: neither frozen nor terminated.
        for step in [TimeSpan.seconds(5), .seconds(30), .minutes(10)] {
            let later = h.at(t0 + step)
            #expect(later.freezes.isEmpty && later.sigterms.isEmpty && later.kills.isEmpty, "at \(step)")
        }
        #expect(h.state(terminal) == .background)
        // The hold ends with its connection: journaled as manager-hold, then frozen at once.
        let closed = h.after(.seconds(1), .connectionClosed(connB))
        #expect(closed.decisions(.end).map(\.reason) == [.managerHold])
        #expect(closed.freezes == [terminal])
    }

    @Test func aManagerHoldThawsASuspendedAppAndIsRefusedForOneNotRunning() {
        var h = Harness()
        let refused = h.send(.holdRequested(terminal, connection: connB, name: nil))
        #expect(refused.replies == [.invalidState(.notRunning)])
        #expect(refused.decisions(.deny).first?.reason == .notRunning)
        let t0 = suspendMail(&h)
        // Even with the app's own budget spent: a manager hold has none.
        let hold = h.at(t0 + .minutes(5), .holdRequested(mail, connection: connB, name: nil))
        #expect(hold.thaws == [mail])
        #expect(hold.decisions(.resume).first?.reason == .managerHold)
        #expect(h.after(.minutes(5)).sigterms.isEmpty && h.state(mail) == .background)
    }

    @Test func lastForegroundIsNowInTheForegroundAndTheMomentItLeftOtherwise() {
        var h = Harness()
        #expect(h.snapshot(mail)?.lastForeground == nil)
        h.at(.zero + .seconds(1), .launchRequested(mail, background: false, exclusive: true))
        h.send(.appLaunched(mail, pid: 100))
        h.send(.appCheckedIn(mail, connection: connA, pid: 100))
        #expect(h.snapshot(mail)?.lastForeground == h.now)
        h.at(.zero + .seconds(5), .launchRequested(terminal, background: false, exclusive: true))
        h.send(.appLaunched(terminal, pid: 200))   // mail goes to the background at 5 s
        h.after(.seconds(7))
        #expect(h.snapshot(mail)?.lastForeground == .zero + .seconds(5))
        #expect(h.snapshot(terminal)?.lastForeground == h.now)
    }

    @Test func stoppingTerminatesTheAppsTheDaemonStartedOnly() {
        var h = Harness()
        h.launchActive(mail)                                        // started by the daemon, checked in
        h.send(.launchRequested(terminal, background: false, exclusive: false))
        h.send(.appLaunched(terminal, pid: 300))                    // started by the daemon, unaware
        h.send(.appCheckedIn(music, connection: connC, pid: 400))   // started by hand
        #expect(h.machine.appsStartedByDaemon == [mail, terminal])
        let stop = h.send(.stopRequested)
        #expect(stop.replies.isEmpty)
        #expect(stop.events(for: mail).map(\.kind) == [.willTerminate])
        #expect(stop.sigterms == [terminal])
        #expect(stop.decisions(.terminate).allSatisfy { $0.reason == .daemonStopping })
        #expect(stop.events(for: music).isEmpty && h.state(music) == .active)
        // SIGTERM after WillTerminateTimeoutSec, SIGKILL after KillTimeoutSec.
        let five = h.after(.seconds(5))
        #expect(five.sigterms == [mail] && five.kills == [terminal])
        #expect(h.after(.seconds(5)).kills == [mail])
        h.send(.processExited(mail, pid: 100))
        h.send(.processExited(terminal, pid: 300))
        #expect(h.machine.appsStartedByDaemon.isEmpty)
    }
}
