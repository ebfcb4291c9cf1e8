import BGTaskCore
import Testing

// The composite core (BGTaskCore/Composite): one input, one action, one deadline for the lifecycle machine
// and the budgets; the decisions the shell used to take by itself (whose process a freeze acts on, which
// connection a refusal counts for) carried by its actions.
@Suite struct DaemonCoreTests {
    static let maps = AppID("org.example.Maps")!
    static let scope = InstanceID("user@1000.service/app.slice/app-maps.scope")

    func core(denialBurst: Int = 2) -> DaemonCore {
        var c = DaemonCore(
            lifecycle: .default, journal: JournalBudget.Limits(),
            denial: DenialBudget.Limits(perCallerBurst: denialBurst, globalBurst: 1000, interval: .seconds(30)))
        for m in [AppManifest(id: mail, uid: 1000), AppManifest(id: Self.maps)] {
            _ = c.handle(.lifecycle(.appRegistered(m), request: nil, from: nil), now: .zero)
        }
        return c
    }

    /// A caller refused past the burst has the connection it was refused on paused, and the interval's
    /// end (a deadline of the core's one timer) releases it.
    @Test func aRefusalCountsForTheConnectionItsCallCameOn() throws {
        var c = core()
        let origin = CallOrigin(connection: connB, caller: DenialBudget.Caller(uid: 2000, pid: 4242))
        let intruder = Caller(pid: 4242, uid: 2000, gid: 2000)
        var pauses: [CallOrigin] = []
        for n in 1...3 {
            let actions = c.handle(
                .lifecycle(.appCallReceived(mail, method: "BeginBackgroundTask", caller: intruder), request: RequestID(UInt64(n)), from: origin),
                now: Instant(microseconds: Int64(n)))
            for case .pauseConnection(let o, _) in actions { pauses.append(o) }
            // The refusal is journaled with the caller's process.
            #expect(actions.contains { if case .perform(.record(let d), true, let peer) = $0 { return d.kind == .deny && peer?.pid == 4242 } else { return false } })
        }
        #expect(pauses == [origin])
        let next = c.peekNextDeadline()
        let end = try #require(next)
        #expect(end == Instant(microseconds: 1) + .seconds(30))
        #expect(!c.handle(.deadlineReached, now: end - .oneMicrosecond).contains(.releasePausedConnections))
        #expect(c.handle(.deadlineReached, now: end).contains(.releasePausedConnections))
        #expect(c.peekNextDeadline() == nil)
    }

    /// The core says whether the daemon's own freezer acts: not on a process that checked in from a cgroup
    /// others started (SPEC §13), only on that cgroup.
    @Test func aProcessInAnAdoptedCgroupIsNotTheOwnFreezers() {
        var c = core()
        _ = c.handle(.lifecycle(.instanceAppeared(Self.maps, Self.scope, pid: 77), request: nil, from: nil), now: .zero)
        _ = c.handle(.lifecycle(.appCheckedIn(Self.maps, connection: connA, pid: 77, inAdoptedCgroup: true), request: RequestID(1), from: nil), now: .zero)
        _ = c.handle(.lifecycle(.terminateRequested(Self.maps), request: RequestID(2), from: nil), now: .zero)
        // will-terminate is not answered: SIGTERM to its processes.
        let actions = c.handle(.deadlineReached, now: .zero + LifecycleConfig.default.willTerminateTimeout)
        let processes = actions.compactMap { action -> Processes? in
            if case .perform(.terminate(_, let p, _), _, _) = action { return p }
            if case .perform(.kill(_, let p, _), _, _) = action { return p }
            return nil
        }
        #expect(!processes.isEmpty)
        #expect(processes.allSatisfy { !$0.own && $0.instances == [Self.scope] })
    }

    /// A process that checked in from outside the adopted cgroups is the own freezer's as well.
    @Test func aProcessOutsideTheAdoptedCgroupsIsTheOwnFreezers() {
        var c = core()
        _ = c.handle(.lifecycle(.instanceAppeared(Self.maps, Self.scope, pid: 77), request: nil, from: nil), now: .zero)
        _ = c.handle(.lifecycle(.appCheckedIn(Self.maps, connection: connA, pid: 88, inAdoptedCgroup: false), request: RequestID(1), from: nil), now: .zero)
        _ = c.handle(.lifecycle(.terminateRequested(Self.maps), request: RequestID(2), from: nil), now: .zero)
        let actions = c.handle(.deadlineReached, now: .zero + LifecycleConfig.default.willTerminateTimeout)
        let own = actions.compactMap { action -> Bool? in
            if case .perform(.terminate(_, let p, _), _, _) = action { return p.own }
            if case .perform(.kill(_, let p, _), _, _) = action { return p.own }
            return nil
        }
        #expect(own == [true])
    }

    /// The core counts the parts of a freeze not done at once (the daemon's freezer, the adopted cgroups):
    /// the suspension is recorded when the last one reports; a thaw meanwhile calls the count off.
    @Test func aFreezeIsConfirmedWhenItsLastPartReportsAndAThawCallsItOff() {
        var c = DaemonCore(lifecycle: .default, journal: JournalBudget.Limits(), denial: DenialBudget.Limits())
        let app = AppID("org.example.Plain")!
        func send(_ input: Input, at t: Instant) -> [CoreAction] { c.handle(.lifecycle(input, request: nil, from: nil), now: t) }
        func suspends(_ actions: [CoreAction]) -> Bool {
            actions.contains { if case .perform(.record(let d), _, _) = $0 { return d.kind == .suspend } else { return false } }
        }
        _ = send(.appRegistered(AppManifest(id: app, lifecycleAware: false)), at: .zero)
        _ = send(.launchRequested(app, background: false, exclusive: true), at: .zero)
        _ = send(.appLaunched(app, pid: 10), at: .zero)
        _ = send(.backgroundRequested(app), at: .zero)
        let grace = Instant.zero + LifecycleConfig.default.didEnterBackgroundTimeout
        _ = c.handle(.deadlineReached, now: grace)
        let freeze = send(.locksObserved(app, LockObservation()), at: grace)
        #expect(freeze.contains { if case .perform(.freeze, _, _) = $0 { return true } else { return false } })
        _ = c.handle(.freezeStarted(app, partsAwaited: 2, own: .frozen), now: grace)
        #expect(!suspends(c.handle(.freezePartDone(app), now: grace)))
        #expect(suspends(c.handle(.freezePartDone(app), now: grace)))
        #expect(c.lifecycle.app(app, now: grace)?.state == .suspended)
        // A late report of a freeze already confirmed decides nothing.
        #expect(c.handle(.freezePartDone(app), now: grace).isEmpty)
        // Thawed (foreground), frozen again, and thawed before its one part reported: the report decides nothing.
        _ = send(.foregroundRequested(app, exclusive: true), at: grace)
        _ = send(.backgroundRequested(app), at: grace)
        let again = grace + LifecycleConfig.default.didEnterBackgroundTimeout
        _ = c.handle(.deadlineReached, now: again)
        _ = send(.locksObserved(app, LockObservation()), at: again)
        _ = c.handle(.freezeStarted(app, partsAwaited: 1, own: .frozen), now: again)
        _ = send(.foregroundRequested(app, exclusive: true), at: again)
        #expect(c.handle(.freezePartDone(app), now: again).isEmpty)
        #expect(c.lifecycle.app(app, now: again)?.state == .active)
    }
}
