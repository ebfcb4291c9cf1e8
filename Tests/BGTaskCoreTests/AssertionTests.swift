import BGTaskCore
import Testing

/// Begin/end rules, the per-app limit, connections and background-mode activities (SPEC §3, §4).
@Suite struct AssertionTests {
    /// An app in the background past its budget, kept running by an audio activity, holding no assertion.
    func appPastItsBudget() -> Harness {
        var h = Harness()
        h.launchActive(music)
        h.send(.activityRequested(music, connection: connA, mode: .audio))
        guard let dib = h.background(music) else { return h }
        h.send(.eventAcknowledged(dib.id))
        h.after(.seconds(31))
        return h
    }

    @Test func beginAlwaysSucceedsInTheForeground() {
        var h = Harness()
        h.launchActive(mail)
        h.after(.minutes(10))
        let task = h.begin(mail, name: "save")
        #expect(task.isValid)
        #expect(h.log.decisions(.grant).last?.taskID == task)
        #expect(h.log.decisions(.grant).last?.reason == .appRequest)
        #expect(h.machine.assertions(now: h.now).first?.remaining == nil)
    }

    @Test func beginAfterTheBudgetIsSpentIsDeniedWithTheInvalidIdentifier() {
        var h = appPastItsBudget()
        #expect(h.state(music) == .background)
        #expect(h.snapshot(music)?.backgroundTimeRemaining == .zero)
        let actions = h.send(.assertionRequested(music, connection: connA, name: "late"))
        #expect(actions.replies == [.taskID(.invalid)])
        #expect(TaskID.invalid.rawValue == 0)
        let deny = actions.decisions(.deny).first
        #expect(deny?.reason == .budgetExhausted)
        #expect(deny?.remaining == .zero)
        #expect(h.machine.liveAssertionCount == 0)
    }

    @Test func beginInTheBackgroundSucceedsWhileBudgetRemains() {
        var h = Harness()
        h.launchActive(mail)
        let t0 = h.now
        guard let dib = h.background(mail) else { return #expect(Bool(false)) }
        // Between did-enter-background and its acknowledgement, with 1 µs of budget left... still a grant.
        h.at(t0 + .seconds(4), .eventAcknowledged(dib.id))
        #expect(h.state(mail) == .suspended)
        // Suspended: a begin thaws the app with the budget it had left (SPEC §3: no fresh budget).
        let hold = h.after(.seconds(6), .assertionRequested(mail, connection: connB, name: "hold"))
        #expect(hold.thaws == [mail])
        #expect(hold.decisions(.resume).first?.reason == .assertionHeld)
        #expect(hold.events.isEmpty)
        #expect(h.state(mail) == .background)
        #expect(h.snapshot(mail)?.backgroundTimeRemaining == .seconds(20))
    }

    @Test func endingAnUnknownOrEndedIdentifierIsHarmless() {
        var h = Harness()
        h.launchActive(mail)
        let task = h.begin(mail)
        #expect(h.send(.assertionEndRequested(mail, task)).replies == [.ok])
        for unknown in [task, TaskID(9999), TaskID.invalid] {
            let actions = h.send(.assertionEndRequested(mail, unknown))
            #expect(actions.replies == [.ok])
            #expect(actions.decisions.count == 1)
            #expect(actions.decisions.first?.kind == .end)
            #expect(actions.decisions.first?.reason == .unknownIdentifier)
            #expect(actions.decisions.first?.severity == .warning)
            #expect(actions.events.isEmpty && actions.freezes.isEmpty && actions.kills.isEmpty)
        }
        #expect(h.state(mail) == .active)
        // Another app's assertion cannot be ended through this app.
        h.launchActive(music, connection: connB, pid: 2)
        let theirs = h.begin(music, on: connB)
        #expect(h.send(.assertionEndRequested(mail, theirs)).decisions.first?.reason == .unknownIdentifier)
        #expect(h.machine.liveAssertionCount == 1)
        #expect(h.send(.activityEndRequested(music, ActivityID(77))).decisions.first?.reason == .unknownIdentifier)
    }

    @Test func the65thLiveAssertionIsDenied() {
        var h = Harness()
        h.launchActive(mail)
        let granted = (0..<64).map { _ in h.begin(mail) }
        #expect(granted.allSatisfy { $0.isValid })
        #expect(Set(granted).count == 64)
        let actions = h.send(.assertionRequested(mail, connection: connA, name: nil))
        #expect(actions.replies == [.taskID(.invalid)])
        #expect(actions.decisions(.deny).first?.reason == .tooManyAssertions)
        // The limit is per app and on live assertions.
        h.launchActive(music, connection: connB, pid: 2)
        #expect(h.begin(music, on: connB).isValid)
        h.send(.assertionEndRequested(mail, granted[10]))
        #expect(h.begin(mail).isValid)
    }

    @Test func expirationWarningsComeInBeginOrder() {
        var h = Harness()
        h.launchActive(mail)
        let tasks = (0..<5).map { h.begin(mail, on: $0 % 2 == 0 ? connA : connB, name: "t\($0)") }
        h.send(.assertionEndRequested(mail, tasks[2]))
        let t0 = h.now
        guard let dib = h.background(mail) else { return #expect(Bool(false)) }
        h.send(.eventAcknowledged(dib.id))
        let warning = h.at(t0 + .seconds(25))
        #expect(warning.events.map { $0.taskID } == [tasks[0], tasks[1], tasks[3], tasks[4]])
        #expect(warning.events.map { $0.taskName } == ["t0", "t1", "t3", "t4"])
    }

    @Test func closingAConnectionReleasesOnlyItsOwnAssertionsAndActivities() {
        var h = Harness()
        h.launchActive(music, connection: connC)
        let a1 = h.begin(music, on: connA)
        let a2 = h.begin(music, on: connA)
        let b1 = h.begin(music, on: connB)
        h.send(.activityRequested(music, connection: connA, mode: .location))
        guard let dib = h.background(music) else { return #expect(Bool(false)) }
        h.send(.eventAcknowledged(dib.id))

        let closeA = h.after(.seconds(1), .connectionClosed(connA))
        let ended = closeA.decisions(.end)
        #expect(ended.count == 3)
        #expect(ended.allSatisfy { $0.reason == .clientDisconnected })
        #expect(ended.compactMap { $0.taskID } == [a1, a2])
        #expect(closeA.freezes.isEmpty)
        #expect(h.machine.assertions(now: h.now).map { $0.taskID } == [b1])
        #expect(h.snapshot(music)?.activities.isEmpty == true)
        #expect(h.state(music) == .background)
        // Closing a connection that holds nothing changes nothing.
        #expect(h.send(.connectionClosed(ConnectionID(99))).isEmpty)
        let closeB = h.after(.seconds(1), .connectionClosed(connB))
        #expect(closeB.decisions(.end).map { $0.taskID } == [b1])
        #expect(closeB.freezes == [music])
        // The event stream (connC) is still there.
        #expect(h.snapshot(music)?.connection == connC)
    }

    @Test func continuousActivityKeepsTheAppRunningPastTheBudget() {
        var h = Harness()
        h.launchActive(music)
        let begin = h.send(.activityRequested(music, connection: connA, mode: .audio))
        guard case .reply(.activityID(let activity), _)? = begin.last else { return #expect(Bool(false)) }
        #expect(begin.decisions(.grant).first?.activityID == activity)
        let t0 = h.now
        guard let dib = h.background(music) else { return #expect(Bool(false)) }
        #expect(h.send(.eventAcknowledged(dib.id)).freezes.isEmpty)
        #expect(h.at(t0 + .seconds(30)).isEmpty)
        #expect(h.at(t0 + .minutes(90)).isEmpty)
        #expect(h.state(music) == .background)
        #expect(h.snapshot(music)?.backgroundTimeRemaining == .zero)
        let end = h.send(.activityEndRequested(music, activity))
        #expect(end.freezes == [music])
        #expect(h.state(music) == .suspended)
    }

    @Test func activityForASuspendedAppThawsIt() {
        var h = Harness()
        h.launchActive(music)
        guard let dib = h.background(music) else { return #expect(Bool(false)) }
        h.send(.eventAcknowledged(dib.id))
        let begin = h.send(.activityRequested(music, connection: connB, mode: .location))
        #expect(begin.thaws == [music])
        #expect(begin.decisions(.resume).first?.reason == .activityHeld)
        #expect(h.state(music) == .background)
    }

    @Test func undeclaredOrNonContinuousModeIsRefused() {
        var h = Harness()
        h.launchActive(mail)
        let undeclared = h.send(.activityRequested(mail, connection: connA, mode: .audio))
        #expect(undeclared.replies == [.failure(.modeNotDeclared)])
        #expect(undeclared.decisions(.deny).first?.reason == .modeNotDeclared)
        h.launchActive(music, connection: connB, pid: 2)
        let fetch = h.send(.activityRequested(music, connection: connB, mode: .fetch))
        #expect(fetch.replies == [.failure(.modeNotContinuous)])
        #expect(h.snapshot(music)?.activities.isEmpty == true)
    }

    @Test func requestsAboutUnknownAppsFail() {
        var h = Harness()
        guard let ghost = AppID("org.example.Ghost") else { return #expect(Bool(false)) }
        let inputs: [Input] = [
            .launchRequested(ghost, background: false, exclusive: true), .foregroundRequested(ghost, exclusive: true),
            .backgroundRequested(ghost), .terminateRequested(ghost), .interruptionBegan(ghost),
            .assertionRequested(ghost, connection: connA, name: nil), .assertionEndRequested(ghost, TaskID(1)),
            .activityRequested(ghost, connection: connA, mode: .audio), .appCheckedIn(ghost, connection: connA, pid: 1),
            .taskRunRequested(ghost, identifier: "x", kind: .refresh, reason: .userRequest),
            .taskCompleted(ghost, identifier: "x", success: true), .remoteNotificationReceived(ghost, payload: nil),
            .notificationPosted(name: "n", app: ghost, payload: nil), .memoryWarningRequested(ghost),
        ]
        for input in inputs {
            #expect(h.send(input) == [.reply(.failure(.noSuchApp), to: nil)], "\(input)")
        }
        // Facts about unknown apps are ignored.
        #expect(h.send(.processExited(ghost, pid: 3)).isEmpty)
        #expect(h.send(.appLaunched(ghost, pid: 3)).isEmpty)
    }

    @Test func checkInErrors() {
        var h = Harness()
        h.launchActive(mail, connection: connA)
        #expect(h.send(.appCheckedIn(mail, connection: connB, pid: nil)).replies == [.failure(.alreadyCheckedIn)])
        #expect(h.send(.appCheckedIn(music, connection: connA, pid: nil)).replies == [.failure(.alreadyCheckedIn)])
        // An app started by hand checks in: a user launch into the foreground.
        let byHand = h.send(.appCheckedIn(music, connection: connB, pid: 31))
        #expect(byHand.sequence == [Step(.didFinishLaunching, .inactive), Step(.didBecomeActive, .active)])
        #expect(byHand.decisions(.launch).first?.reason == .checkedIn)
        // ... and closing its stream means it is gone.
        let gone = h.send(.connectionClosed(connB))
        #expect(gone.decisions(.terminate).first?.reason == .clientDisconnected)
        #expect(h.state(music) == .notRunning)
    }

    @Test func assertionForAnAppThatIsNotRunningIsDenied() {
        var h = Harness()
        let actions = h.send(.assertionRequested(mail, connection: connA, name: nil))
        #expect(actions.replies == [.taskID(.invalid)])
        #expect(actions.decisions(.deny).first?.reason == .notRunning)
    }

    @Test func memoryPressureWarnsBackgroundAppsThenKillsSuspendedFirst() {
        var h = Harness()
        h.launchActive(mail, connection: connA, pid: 1)
        h.launchActive(music, connection: connB, pid: 2)
        h.send(.launchRequested(terminal, background: false, exclusive: false))
        h.send(.appLaunched(terminal, pid: 3))
        guard let dib = h.background(mail) else { return #expect(Bool(false)) }
        h.send(.eventAcknowledged(dib.id))  // mail suspended
        _ = h.begin(music, on: connB)
        h.after(.seconds(1))
        guard let dib2 = h.background(music) else { return #expect(Bool(false)) }
        h.send(.eventAcknowledged(dib2.id))  // music running in the background
        let warn = h.send(.memoryWarningRequested(nil))
        #expect(warn.events(for: music).map { $0.kind } == [.memoryWarning])
        #expect(warn.events(for: mail).isEmpty)
        let reclaim = h.send(.memoryReclaimRequested(count: 5))
        #expect(reclaim.kills == [mail])
        #expect(reclaim.events(for: music).map { $0.kind } == [.willTerminate])
        #expect(reclaim.decisions(.terminate).allSatisfy { $0.reason == .memoryPressure })
        // Never an active app.
        #expect(h.snapshot(terminal)?.terminating == false)
    }
}
