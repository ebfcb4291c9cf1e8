import BGTaskCore
import Testing
@testable import BGTaskDaemon

/// issue 13: the core decides with structured facts; the journal layer renders the same sentences the core
/// once wrote itself. The expected texts below are those of the core before the split (its format strings).
@Suite struct DecisionMessagesTests {
    let app = AppID("org.example.Mail")!
    let conn = ConnectionID(1)

    /// A lifecycle through the real core: launch, background, suspend, resume for an assertion, terminate.
    @Test func aLifecycleRendersTheSentencesOfBefore() {
        var m = LifecycleMachine(config: LifecycleConfig(backgroundTimeBudget: .seconds(30)))
        var t = Instant(microseconds: 1_000_000)
        var messages: [String] = []
        func send(_ input: Input) {
            for action in m.handle(input, now: t) {
                if let d = action.decision { messages.append(d.message) }
                // The shell's answer to a lock check (SPEC §14): no lock.
                if case .observeLocks(let app, _) = action { send(.locksObserved(app, LockObservation())) }
            }
        }
        send(.appRegistered(AppManifest(id: app)))
        send(.launchRequested(app, background: false, exclusive: false))
        send(.appLaunched(app, pid: 4242))
        send(.appCheckedIn(app, connection: conn, pid: 4242))
        send(.backgroundRequested(app))
        let ack = m.handle(.deadlineReached, now: t)  // nothing due: no decision
        #expect(ack.isEmpty)
        t = t + .seconds(5)
        send(.deadlineReached)  // did-enter-background not acknowledged: terminated
        send(.processExited(app, pid: 4242))
        #expect(messages == [
            "launching org.example.Mail into the foreground (user)",
            "org.example.Mail (pid 4242) launched into the foreground (user)",
            "org.example.Mail went to the background with 30s of background time",
            "terminating org.example.Mail: did-enter-background was not acknowledged within 5s; will-terminate sent, SIGTERM in 5s",
            "org.example.Mail exited after termination (did-enter-background-timeout)",
        ])
    }

    @Test func assertionsSuspensionAndDenials() {
        var m = LifecycleMachine()
        var t = Instant(microseconds: 1_000_000)
        var messages: [String] = []
        func send(_ input: Input) {
            for action in m.handle(input, now: t) {
                if let d = action.decision { messages.append(d.message) }
                // The shell's answer to a lock check (SPEC §14): no lock.
                if case .observeLocks(let app, _) = action { send(.locksObserved(app, LockObservation())) }
            }
        }
        send(.appRegistered(AppManifest(id: app, backgroundModes: [.audio])))
        send(.assertionRequested(app, connection: conn, name: "sync"))
        send(.launchRequested(app, background: false, exclusive: false))
        send(.appLaunched(app, pid: 7))
        send(.appCheckedIn(app, connection: conn, pid: 7))
        messages = []
        var ackID: EventID?
        for action in m.handle(.backgroundRequested(app), now: t) {
            if case .deliver(_, _, let e) = action, e.needsAck { ackID = e.id }
            if let d = action.decision { messages.append(d.message) }
        }
        send(.eventAcknowledged(ackID ?? EventID(0)))
        t = t + .seconds(1)
        send(.assertionRequested(app, connection: conn, name: "sync"))
        send(.activityRequested(app, connection: conn, mode: .voip))
        send(.activityRequested(app, connection: conn, mode: .audio))
        send(.connectionClosed(ConnectionID(99)))
        send(.notificationPosted(name: "org.example.note", app: app, payload: nil))
        #expect(messages == [
            "org.example.Mail went to the background with 30s of background time",
            "suspended org.example.Mail: no background task, activity or scheduled task holds it",
            "resumed org.example.Mail (assertion-held)",
            "granted background task 1 (sync) to org.example.Mail, 29s of background time left",
            "denied a voip activity to org.example.Mail: its manifest does not declare voip",
            "granted audio activity 1 to org.example.Mail",
            "delivered notification org.example.note to org.example.Mail",
        ])
    }

    @Test func sharedAndShellDecisions() {
        func render(_ kind: DecisionKind, _ reason: Reason, _ detail: DecisionDetail, task: TaskID? = nil,
                    name: String? = nil) -> String {
            Decision(kind: kind, reason: reason, app: app, taskID: task, taskName: name, detail: detail).message
        }
        #expect(render(.deny, .tooManyAssertions, .assertionDenied(live: 64), name: "x")
            == "denied a background task (x) to org.example.Mail: it already holds 64 live background tasks")
        #expect(render(.deny, .notRunning, .assertionDenied(live: 0))
            == "denied a background task to org.example.Mail: it is not running")
        #expect(render(.terminate, .expirationNotHandled, .sigtermSent(.budgetEnded(live: 2, budget: .seconds(30)), killIn: .seconds(5)))
            == "terminating org.example.Mail: 2 background tasks were still live when its budget of 30s ended; SIGTERM, SIGKILL in 5s")
        #expect(render(.deny, .invalidState, .taskDenied, name: "org.example.Mail.refresh")
            == "did not run task org.example.Mail.refresh of org.example.Mail: that task is already running")
        #expect(render(.deny, .permissionDenied, .callerNotAppUser(method: "CheckIn", caller: Caller(pid: 9, uid: 1000, gid: 1000)))
            == "Denied CheckIn for org.example.Mail to pid 9 uid 1000: not the app's user")
        #expect(render(.terminate, .appExited, .exited(terminated: false, released: 2))
            == "org.example.Mail exited by itself; released 2 assertions/activities")
        #expect(render(.policy, .userRequest, .note("a sentence of the shell")) == "a sentence of the shell")
        #expect(render(.terminate, .manifestRemoved, .releasedFromManagement(instances: [InstanceID("a.scope"), InstanceID("b.scope")]))
            == "released org.example.Mail from management: its manifest or desktop entry was removed; its instances, "
                + "started by others, keep running unfrozen (a.scope, b.scope)")
        #expect(render(.resume, .adoptionChanged, .resumedForRelease)
            == "resumed org.example.Mail (adoption-changed): released from management")
        // SPEC §14.
        #expect(render(.resume, .busCall, .resumedForBusCall(sender: ":1.42", member: "Activate", budget: .seconds(5)))
            == "resumed org.example.Mail for 5s: a method call Activate from :1.42 on the session bus waits for it")
        let music = AppID("org.example.Music")!
        let live = IdleInhibition(apps: [app, music], assertions: 2, tasks: 0, activities: 1)
        #expect(Decision(kind: .policy, reason: .systemSleep, app: nil, detail: .systemSleep(live: live)).message
            == "the system is going to sleep with live background work: 2 background tasks, 1 activity of "
                + "org.example.Mail, org.example.Music")
        #expect(Decision(kind: .policy, reason: .systemSleep, app: nil, detail: .systemSleep(live: nil)).message
            == "the system is going to sleep; no background work is live")
        let many = (0..<10).map { AppID("org.example.A\($0)")! }
        #expect(SystemSleepWords.why(IdleInhibition(apps: many, assertions: 0, tasks: 1, activities: 0))
            == "1 scheduled task of " + many.prefix(8).map(\.rawValue).joined(separator: ", ") + " and 2 more")
    }

    /// Every decision a scripted run of the core produces renders a sentence that names its app.
    @Test func everyDecisionOfARunNamesItsApp() {
        var m = LifecycleMachine(config: LifecycleConfig(backgroundTimeBudget: .seconds(2), expirationWarning: .seconds(1)))
        var t = Instant(microseconds: 1)
        var decisions: [Decision] = []
        func send(_ input: Input) { decisions += m.handle(input, now: t).compactMap(\.decision) }
        send(.appRegistered(AppManifest(id: app)))
        send(.taskRunRequested(app, identifier: "r", kind: .refresh, reason: .taskScheduled))
        send(.appLaunched(app, pid: 3))
        send(.appCheckedIn(app, connection: conn, pid: 3))
        send(.assertionRequested(app, connection: conn, name: nil))
        send(.remoteNotificationReceived(app, payload: nil))
        send(.memoryWarningRequested(app))
        for _ in 0..<40 {
            t = t + .milliseconds(500)
            send(.deadlineReached)
        }
        send(.processExited(app, pid: 3))
        #expect(decisions.count >= 8)
        for d in decisions {
            #expect(d.message.contains(app.rawValue), "\(d.kind) \(d.reason): \(d.message)")
        }
    }
}
