import BGTaskCore
import Testing

/// One test per sequence of SPEC §2: the exact events, in order, with the states they announce.
@Suite struct SequenceTests {
    @Test func launchToForeground() {
        var h = Harness()
        let request = h.send(.launchRequested(mail, background: false, exclusive: false))
        #expect(request.launches == [mail])
        #expect(request.replies == [.ok])
        #expect(h.state(mail) == .notRunning)
        #expect(h.snapshot(mail)?.launching == true)
        #expect(h.send(.appLaunched(mail, pid: 42)).isEmpty)

        let checkIn = h.send(.appCheckedIn(mail, connection: connA, pid: 42))
        #expect(checkIn.replies == [.checkedIn(state: .notRunning)])
        #expect(checkIn.sequence == [Step(.didFinishLaunching, .inactive), Step(.didBecomeActive, .active)])
        #expect(checkIn.events.first?.launchReason == .user)
        #expect(checkIn.events.allSatisfy { !$0.needsAck })
        let launch = checkIn.decisions(.launch)
        #expect(launch.count == 1)
        #expect(launch.first?.state == .active && launch.first?.previousState == .notRunning && launch.first?.pid == 42)
        #expect(h.state(mail) == .active)
        #expect(h.snapshot(mail)?.pid == 42)
        #expect(h.machine.nextDeadline == nil)
    }

    @Test func foregroundToBackgroundThenSuspended() {
        var h = Harness()
        h.launchActive(mail)
        let actions = h.send(.backgroundRequested(mail))
        #expect(actions.sequence == [Step(.willResignActive, .inactive), Step(.didEnterBackground, .background)])
        let dib = actions.events[1]
        #expect(dib.needsAck)
        #expect(dib.deadline == h.now + .seconds(5))
        #expect(actions.decisions(.background).first?.reason == .userRequest)
        #expect(h.state(mail) == .background)
        #expect(h.snapshot(mail)?.backgroundTimeRemaining == .seconds(30))

        let ack = h.after(.seconds(1), .eventAcknowledged(dib.id))
        #expect(ack.freezes == [mail])
        #expect(ack.events.isEmpty)
        #expect(ack.decisions(.suspend).first?.reason == .noAssertions)
        #expect(ack.decisions(.suspend).first?.previousState == .background)
        #expect(h.state(mail) == .suspended)
    }

    @Test func backgroundOrSuspendedToForeground() {
        var h = Harness()
        h.launchActive(mail)
        // From the background (held by an assertion): no thaw.
        _ = h.begin(mail)
        guard let dib = h.background(mail) else { return #expect(Bool(false)) }
        h.send(.eventAcknowledged(dib.id))
        #expect(h.state(mail) == .background)
        let fromBackground = h.after(.seconds(2), .foregroundRequested(mail, exclusive: true))
        #expect(fromBackground.thaws.isEmpty)
        #expect(fromBackground.sequence == [Step(.willEnterForeground, .inactive), Step(.didBecomeActive, .active)])
        #expect(h.snapshot(mail)?.backgroundTimeRemaining == nil)

        // From suspended: thaw, the queued notification, then the foreground events.
        var s = Harness()
        s.launchActive(mail)
        guard let dib2 = s.background(mail) else { return #expect(Bool(false)) }
        s.send(.eventAcknowledged(dib2.id))
        #expect(s.state(mail) == .suspended)
        s.send(.notificationPosted(name: "mail-arrived", app: mail, payload: Payload(json: #"{"n":1}"#)))
        let fromSuspended = s.after(.seconds(60), .foregroundRequested(mail, exclusive: true))
        guard case .thaw(mail, _, let resume)? = fromSuspended.first else { return #expect(Bool(false), "thaw first") }
        #expect(resume.kind == .resume && resume.reason == .userRequest)
        #expect(
            fromSuspended.sequence == [
                Step(.notification, .background), Step(.willEnterForeground, .inactive), Step(.didBecomeActive, .active),
            ])
        #expect(fromSuspended.events.first?.name == "mail-arrived")
        #expect(fromSuspended.events.first?.payload == Payload(json: #"{"n":1}"#))
        #expect(s.state(mail) == .active)
    }

    @Test func launchIntoBackgroundForScheduledTask() {
        var h = Harness()
        let request = h.send(.taskRunRequested(music, identifier: "org.example.Music.refresh", kind: .refresh, reason: .taskScheduled))
        guard case .launch(music, .backgroundTask, let launch)? = request.first else {
            return #expect(Bool(false), "launch first")
        }
        #expect(launch.reason == .taskScheduled)
        h.send(.appLaunched(music, pid: 7))
        let checkIn = h.after(.seconds(1), .appCheckedIn(music, connection: connA, pid: 7))
        #expect(
            checkIn.sequence == [
                Step(.didFinishLaunching, .inactive), Step(.didEnterBackground, .background), Step(.performTask, .background),
            ])
        #expect(checkIn.events[0].launchReason == .backgroundTask)
        #expect(checkIn.events[2].identifier == "org.example.Music.refresh")
        #expect(checkIn.events[2].deadline == h.now + .seconds(30))
        #expect(checkIn.decisions(.runTask).count == 1)

        // Acknowledged, but the task still runs: not suspended until it completes.
        #expect(h.send(.eventAcknowledged(checkIn.events[1].id)).freezes.isEmpty)
        #expect(h.state(music) == .background)
        let done = h.after(.seconds(3), .taskCompleted(music, identifier: "org.example.Music.refresh", success: true))
        #expect(done.decisions(.completeTask).first?.reason == .taskCompleted)
        #expect(done.freezes == [music])
        #expect(h.state(music) == .suspended)
        #expect(h.machine.nextDeadline == nil)
    }

    @Test func launchIntoBackgroundForRemoteNotification() {
        var h = Harness()
        let request = h.send(.remoteNotificationReceived(music, payload: Payload(json: #"{"badge":3}"#)))
        #expect(request.launches == [music])
        h.send(.appLaunched(music, pid: 8))
        let checkIn = h.send(.appCheckedIn(music, connection: connA, pid: 8))
        #expect(
            checkIn.sequence == [
                Step(.didFinishLaunching, .inactive), Step(.didEnterBackground, .background), Step(.notification, .background),
            ])
        #expect(checkIn.events[0].launchReason == .remoteNotification)
        #expect(checkIn.events[2].payload == Payload(json: #"{"badge":3}"#))
        #expect(checkIn.events[2].needsAck)
        h.send(.eventAcknowledged(checkIn.events[1].id))
        #expect(h.state(music) == .background)
        // The wake window is RefreshTaskBudgetSec; then suspended (no completion call exists for notifications).
        #expect(h.after(.seconds(30) - .oneMicrosecond).freezes.isEmpty)
        #expect(h.after(.oneMicrosecond).freezes == [music])
    }

    @Test func resumeIntoBackgroundForEvent() {
        var h = Harness()
        h.launchActive(music)
        guard let dib = h.background(music) else { return #expect(Bool(false)) }
        h.send(.eventAcknowledged(dib.id))
        #expect(h.state(music) == .suspended)

        let wake = h.after(.minutes(20), .taskRunRequested(music, identifier: "sync", kind: .processing, reason: .taskScheduled))
        guard case .thaw(music, _, _)? = wake.first else { return #expect(Bool(false), "thaw first") }
        #expect(wake.sequence == [Step(.didEnterBackground, .background), Step(.performTask, .background)])
        #expect(wake.events[1].deadline == h.now + .minutes(5))
        // SPEC §3: the wake runs on the task's budget; the app's, spent 20 minutes ago, stays spent.
        #expect(h.snapshot(music)?.backgroundTimeRemaining == .zero)
        h.send(.eventAcknowledged(wake.events[0].id))
        let done = h.after(.seconds(40), .taskCompleted(music, identifier: "sync", success: false))
        #expect(done.decisions(.completeTask).first?.reason == .taskFailed)
        #expect(done.freezes == [music])
        #expect(h.state(music) == .suspended)
    }

    @Test func interruption() {
        var h = Harness()
        h.launchActive(mail)
        let begin = h.send(.interruptionBegan(mail))
        #expect(begin.sequence == [Step(.willResignActive, .inactive)])
        #expect(begin.decisions.first?.reason == .interruption)
        #expect(h.state(mail) == .inactive)
        #expect(h.snapshot(mail)?.interrupted == true)
        let end = h.send(.interruptionEnded(mail))
        #expect(end.sequence == [Step(.didBecomeActive, .active)])
        #expect(end.decisions.first?.reason == .interruptionEnded)
        #expect(h.state(mail) == .active)
        // Ending an interruption that did not begin is refused.
        #expect(h.send(.interruptionEnded(terminal)).replies == [.invalidState(.notRunning)])
    }

    @Test func terminationOfRunningApp() {
        var h = Harness()
        h.launchActive(mail, pid: 55)
        let t0 = h.now
        let request = h.send(.terminateRequested(mail))
        #expect(request.sequence == [Step(.willTerminate, .active)])
        #expect(request.events.first?.deadline == t0 + .seconds(5))
        #expect(request.decisions(.terminate).first?.reason == .userRequest)
        #expect(h.snapshot(mail)?.terminating == true)
        #expect(h.machine.nextDeadline == t0 + .seconds(5))

        #expect(h.at(t0 + .seconds(5) - .oneMicrosecond).isEmpty)
        #expect(h.at(t0 + .seconds(5)).sigterms == [mail])
        #expect(h.at(t0 + .seconds(10) - .oneMicrosecond).isEmpty)
        #expect(h.at(t0 + .seconds(10)).kills == [mail])
        #expect(h.machine.nextDeadline == nil)

        let exit = h.after(.milliseconds(3), .processExited(mail, pid: 55))
        #expect(exit.decisions.first?.kind == .terminate)
        #expect(exit.decisions.first?.reason == .userRequest)
        #expect(exit.decisions.first?.state == .notRunning)
        #expect(h.state(mail) == .notRunning)
        #expect(h.snapshot(mail)?.terminating == false)
    }

    @Test func terminationOfSuspendedAppKillsWithoutEvents() {
        var h = Harness()
        h.launchActive(mail)
        guard let dib = h.background(mail) else { return #expect(Bool(false)) }
        h.send(.eventAcknowledged(dib.id))
        let request = h.send(.terminateRequested(mail))
        #expect(request.events.isEmpty)
        #expect(request.kills == [mail])
        #expect(request.thaws.isEmpty)
        h.send(.processExited(mail, pid: nil))
        #expect(h.state(mail) == .notRunning)
    }

    @Test func appExitingByItselfGoesToNotRunning() {
        var h = Harness()
        h.launchActive(mail, pid: 9)
        _ = h.begin(mail)
        // A stale pid is ignored.
        #expect(h.send(.processExited(mail, pid: 8)).isEmpty)
        let exit = h.send(.processExited(mail, pid: 9))
        #expect(exit.events.isEmpty)
        #expect(exit.decisions.first?.reason == .appExited)
        #expect(h.state(mail) == .notRunning)
        #expect(h.machine.liveAssertionCount == 0)
        // The app can be launched again and starts the sequence anew.
        let again = h.launchActive(mail, connection: connB, pid: 10)
        #expect(again.sequence == [Step(.didFinishLaunching, .inactive), Step(.didBecomeActive, .active)])
    }

    @Test func lifecycleUnawareAppGetsNoEventsAndIsTerminatedBySignals() {
        var h = Harness()
        let launch = h.send(.launchRequested(terminal, background: false, exclusive: false))
        #expect(launch.launches == [terminal])
        let spawned = h.send(.appLaunched(terminal, pid: 300))
        #expect(spawned.events.isEmpty)
        #expect(h.state(terminal) == .active)
        // No launch timeout for an app that will never check in.
        #expect(h.machine.nextDeadline == nil)
        let t0 = h.now
        let term = h.send(.terminateRequested(terminal))
        #expect(term.events.isEmpty)
        #expect(term.sigterms == [terminal])
        #expect(h.at(t0 + .seconds(5) - .oneMicrosecond).isEmpty)
        #expect(h.at(t0 + .seconds(5)).kills == [terminal])
    }

    @Test func exclusiveForegroundSendsActiveAppsToBackground() {
        var h = Harness()
        h.launchActive(mail, connection: connA)
        h.launchActive(music, connection: connB, pid: 200)
        #expect(h.state(mail) == .active && h.state(music) == .active)
        let actions = h.send(.foregroundRequested(music, exclusive: true))
        #expect(actions.events(for: mail).map { $0.kind } == [.willResignActive, .didEnterBackground])
        #expect(actions.events(for: music).isEmpty)
        #expect(actions.decisions(.background).first?.reason == .anotherAppForeground)
        #expect(h.state(mail) == .background)
        // Non-exclusive keeps the others.
        var d = Harness()
        d.launchActive(mail, connection: connA)
        d.launchActive(music, connection: connB, pid: 200)
        #expect(d.send(.foregroundRequested(music, exclusive: false)).events.isEmpty)
        #expect(d.state(mail) == .active)
    }
}
