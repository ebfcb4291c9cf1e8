import BGTaskCore
import Testing

/// SPEC §14: live background work holds the idle inhibitor; sleep and resume; bus-call wakes.
@Suite struct SystemSleepTests {
    func inhibitions(_ actions: [Action]) -> [IdleInhibition?] {
        actions.compactMap { if case .inhibitIdle(let live) = $0 { return .some(live) } else { return nil } }
    }

    func suspendedMail(config: LifecycleConfig = .default) -> Harness {
        var h = Harness(config: config)
        h.launchActive(mail)
        if let dib = h.background(mail) { h.send(.eventAcknowledged(dib.id)) }
        return h
    }

    /// The action names a few apps and counts the rest: the input recording keeps one at every change of
    /// the set, so a list of every app made 3,000 apps taking up work cost ~70 MiB there.
    @Test func anInhibitionNamesAtMostEightAppsAndCountsThemAll() {
        let apps = (0..<20).compactMap { AppID("org.example.Many\(100 + $0)") }
        var h = Harness(manifests: Harness.standardManifests + apps.map { AppManifest(id: $0, lifecycleAware: false) })
        for (n, app) in apps.enumerated() {
            h.launchActive(app, connection: ConnectionID(UInt64(500 + n)), pid: Int32(500 + n))
            _ = h.begin(app, on: ConnectionID(UInt64(500 + n)))
        }
        let told = inhibitions(h.log).compactMap { $0 }
        #expect(told.count == 20)
        #expect(told.allSatisfy { $0.apps.count <= IdleInhibition.namedLimit })
        #expect(told.map(\.appCount) == Array(1...20))
        #expect(told.last?.apps == Array(apps.prefix(8)))
        #expect(told.last?.assertions == 20)
    }

    @Test func liveWorkHoldsTheIdleInhibitorUntilTheLastEnds() {
        var h = Harness()
        h.launchActive(mail, connection: connA)
        h.launchActive(music, connection: connB, pid: 2)
        #expect(h.log.allSatisfy { if case .inhibitIdle = $0 { false } else { true } })
        let task = h.begin(mail, on: connA, name: "upload")
        #expect(inhibitions(h.log) == [IdleInhibition(apps: [mail], assertions: 1, tasks: 0, activities: 0)])
        // A second assertion of the same app changes no set of apps: nothing new to tell.
        let second = h.send(.assertionRequested(mail, connection: connA, name: nil))
        #expect(inhibitions(second).isEmpty)
        // Another app's activity: told again, with both.
        let audio = h.send(.activityRequested(music, connection: connB, mode: .audio))
        #expect(inhibitions(audio) == [IdleInhibition(apps: [mail, music], assertions: 2, tasks: 0, activities: 1)])
        // Mail's work ends (its connection closes): music's activity still holds it.
        let closed = h.send(.connectionClosed(connA))
        #expect(inhibitions(closed).map { $0?.apps } == [[music]])
        _ = task
    }

    @Test func theLastEndReleasesIt() {
        var h = Harness()
        h.launchActive(mail)
        let task = h.begin(mail, on: connA)
        let end = h.send(.assertionEndRequested(mail, task))
        #expect(inhibitions(end) == [nil])
        // The inhibition comes after the decision that ended the work.
        #expect(end.firstIndex { $0.decision?.kind == .end } ?? 99 < end.firstIndex { if case .inhibitIdle = $0 { true } else { false } } ?? -1)
    }

    @Test func aRunningScheduledTaskHoldsItAndItsCompletionReleasesIt() {
        var h = suspendedMail()
        let run = h.send(.taskRunRequested(mail, identifier: "sync", kind: .refresh, reason: .taskScheduled))
        #expect(inhibitions(run) == [IdleInhibition(apps: [mail], assertions: 0, tasks: 1, activities: 0)])
        let done = h.send(.taskCompleted(mail, identifier: "sync", success: true))
        #expect(inhibitions(done) == [nil])
    }

    @Test func aTerminatedAppReleasesIt() {
        var h = Harness()
        h.launchActive(mail, pid: 100)
        _ = h.begin(mail)
        h.send(.terminateRequested(mail))
        let exit = h.send(.processExited(mail, pid: 100))
        #expect(inhibitions(exit) == [nil])
    }

    @Test func sleepIsOnePolicyDecisionNamingTheLiveWork() {
        var h = Harness()
        h.launchActive(mail)
        _ = h.begin(mail)
        let sleep = h.send(.systemSleepPreparing)
        #expect(sleep.decisions.count == 1)
        let d = sleep.decisions.first
        #expect(d?.kind == .policy && d?.reason == .systemSleep && d?.app == nil)
        #expect(d?.detail == .systemSleep(live: IdleInhibition(apps: [mail], assertions: 1, tasks: 0, activities: 0)))
        #expect(sleep.replies.isEmpty)
    }

    @Test func resumeChecksEveryFrozenApp() {
        var h = suspendedMail()
        h.launchActive(music, connection: connB, pid: 2)
        #expect(h.state(mail) == .suspended)
        let resumed = h.send(.systemResumed)
        let checked = resumed.compactMap { if case .verifyFrozen(let app, _) = $0 { return app } else { return nil } }
        #expect(checked == [mail])
        #expect(resumed.decisions.isEmpty && resumed.replies.isEmpty)
    }

    @Test func aBusCallResumesASuspendedAppForItsBudgetThenItIsSuspendedAgain() {
        var config = LifecycleConfig.default
        config.busCallBudget = .seconds(2)
        var h = suspendedMail(config: config)
        let call = h.send(.busCallReceived(mail, sender: ":1.42", member: "Activate"))
        #expect(call.thaws == [mail])
        let resume = call.decisions(.resume).first
        #expect(resume?.reason == .busCall)
        #expect(resume?.detail == .resumedForBusCall(sender: ":1.42", member: "Activate", budget: .seconds(2)))
        #expect(call.events.isEmpty, "no event: the app only answers the call")
        #expect(call.replies == [.ok])
        #expect(h.state(mail) == .background)
        // At 2 s - 1 µs it still runs; at 2 s it is suspended again.
        #expect(h.after(.seconds(2) - .oneMicrosecond).freezes.isEmpty)
        let end = h.after(.oneMicrosecond)
        #expect(end.freezes == [mail])
        #expect(h.state(mail) == .suspended)
    }

    @Test func aBusCallToABackgroundAppKeepsItRunningThatLong() {
        var config = LifecycleConfig.default
        config.busCallBudget = .seconds(10)
        var h = Harness(config: config)
        h.launchActive(mail)
        let dib = h.background(mail)
        let call = h.send(.busCallReceived(mail, sender: ":1.7", member: "PlayPause"))
        #expect(call.thaws.isEmpty && call.decisions.isEmpty && call.replies == [.ok])
        if let dib { h.send(.eventAcknowledged(dib.id)) }
        #expect(h.state(mail) == .background, "acknowledged, but the call's window is open")
        #expect(h.after(.seconds(10)).freezes == [mail])
    }

    @Test func aBusCallToAnAppNotRunningIsRefused() {
        var h = Harness()
        #expect(h.send(.busCallReceived(mail, sender: ":1.1", member: "Activate")).replies == [.invalidState(.notRunning)])
        #expect(h.send(.busCallReceived(AppID("org.example.None")!, sender: ":1.1", member: "X")).replies == [.failure(.noSuchApp)])
    }
}
