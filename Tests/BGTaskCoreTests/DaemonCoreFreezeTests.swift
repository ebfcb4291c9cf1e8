import BGTaskCore
import Testing

/// The own freezer's part of a freeze (DaemonCore+Freezes.swift): the freezer reports facts, the core says
/// when to look again (each boundary: nothing at the deadline − 1 µs, the look at the deadline), when the
/// freeze is late, and falls back to SIGSTOP (`freeze-fallback`) when the freezer cannot freeze.
@Suite struct DaemonCoreFreezeTests {
    static let app = AppID("org.example.Plain")!
    static let us = TimeSpan.microseconds(1)

    /// A core whose app was just asked to freeze (at the returned instant).
    static func freezing() -> (DaemonCore, Instant) {
        var c = DaemonCore(lifecycle: .default, journal: JournalBudget.Limits(), denial: DenialBudget.Limits())
        func send(_ input: Input, at t: Instant) { _ = c.handle(.lifecycle(input, request: nil, from: nil), now: t) }
        send(.appRegistered(AppManifest(id: app, lifecycleAware: false)), at: .zero)
        send(.launchRequested(app, background: false, exclusive: true), at: .zero)
        send(.appLaunched(app, pid: 10), at: .zero)
        send(.backgroundRequested(app), at: .zero)
        let grace = Instant.zero + LifecycleConfig.default.didEnterBackgroundTimeout
        _ = c.handle(.deadlineReached, now: grace)
        send(.locksObserved(app, LockObservation()), at: grace)
        return (c, grace)
    }

    static func checks(_ actions: [CoreAction]) -> [Bool] {
        actions.compactMap { if case .checkFreeze(app, _, let late) = $0 { return late } else { return nil } }
    }

    static func decisions(_ actions: [CoreAction]) -> [Decision] { actions.compactMap(\.decision) }

    static func suspends(_ actions: [CoreAction]) -> Bool { decisions(actions).contains { $0.kind == .suspend } }

    /// Looks at `due` (none a microsecond before), answers `notYet`; returns the next due instant.
    static func look(_ c: inout DaemonCore, at due: Instant, late: Bool = false) -> Instant? {
        #expect(c.peekNextDeadline() == due)
        #expect(checks(c.handle(.deadlineReached, now: due - us)).isEmpty, "a look before its deadline")
        #expect(checks(c.handle(.deadlineReached, now: due)) == [late])
        #expect(c.handle(.freezeChecked(app, .notYet), now: due).isEmpty)
        return c.peekNextDeadline()
    }

    @Test func aFreezeNotDoneIsLookedAtAgainDoublingUpTo20msThen100msApartOnceLate() {
        var (c, t0) = Self.freezing()
        #expect(c.handle(.freezeStarted(Self.app, partsAwaited: 1, own: .notYet), now: t0).isEmpty)
        var due = t0 + .microseconds(500)
        for step in [1_000, 2_000, 4_000, 8_000, 16_000, 20_000, 20_000] as [Int64] {
            let next = Self.look(&c, at: due)
            #expect(next == due + .microseconds(step))
            due = next ?? due
        }
        // Every 20 ms until a look falls at or past 1 s after the freeze: that one says it is late, once.
        while due - t0 < DaemonCore.lateFreeze {
            due = Self.look(&c, at: due) ?? due
        }
        due = Self.look(&c, at: due, late: true) ?? due
        let next = Self.look(&c, at: due)
        #expect(next == due + DaemonCore.lateFreezeCheck)
        // Done: the suspension is recorded, no look is due any more.
        #expect(Self.suspends(c.handle(.freezeChecked(Self.app, .frozen), now: due)))
        #expect(c.peekNextDeadline() != next)
        #expect(Self.checks(c.handle(.deadlineReached, now: due + DaemonCore.lateFreezeCheck)).isEmpty)
    }

    /// The look at 1 s after the freeze says late; one a microsecond before does not (the next one does).
    @Test func theLookAtOneSecondSaysLateAndTheOneAMicrosecondBeforeDoesNot() {
        for early in [false, true] {
            var (c, t0) = Self.freezing()
            _ = c.handle(.freezeStarted(Self.app, partsAwaited: 1, own: .notYet), now: t0)
            #expect(Self.checks(c.handle(.deadlineReached, now: t0 + .microseconds(500))) == [false])
            // The answer comes late (a busy machine): the next look is 1 ms after it.
            let answered = t0 + DaemonCore.lateFreeze - .milliseconds(1) - (early ? Self.us : .microseconds(0))
            _ = c.handle(.freezeChecked(Self.app, .notYet), now: answered)
            let due = answered + .milliseconds(1)
            if early {
                let next = Self.look(&c, at: due, late: false)
                #expect(next == due + .milliseconds(2))
                _ = Self.look(&c, at: next ?? due, late: true)
            } else {
                #expect(Self.look(&c, at: due, late: true) == due + DaemonCore.lateFreezeCheck)
            }
        }
    }

    @Test func theFreezersReportCountsOnceAndAThawCallsTheLooksOff() {
        var (c, t0) = Self.freezing()
        _ = c.handle(.freezeStarted(Self.app, partsAwaited: 1, own: .notYet), now: t0)
        // The inotify watch and a look both say done: one suspension.
        #expect(Self.suspends(c.handle(.freezeChecked(Self.app, .frozen), now: t0)))
        #expect(c.handle(.freezeChecked(Self.app, .frozen), now: t0).isEmpty)
        #expect(Self.checks(c.handle(.deadlineReached, now: t0 + .microseconds(500))).isEmpty)
        // Another freeze thawed (foreground) before it is done: no look follows, a late report decides nothing.
        var (c2, t1) = Self.freezing()
        _ = c2.handle(.freezeStarted(Self.app, partsAwaited: 1, own: .notYet), now: t1)
        #expect(c2.peekNextDeadline() == t1 + .microseconds(500))
        let thawed = c2.handle(.lifecycle(.foregroundRequested(Self.app, exclusive: true), request: nil, from: nil), now: t1)
        #expect(thawed.contains { if case .perform(.thaw, _, _) = $0 { return true } else { return false } })
        #expect(Self.checks(c2.handle(.deadlineReached, now: t1 + .microseconds(500))).isEmpty)
        #expect(c2.handle(.freezeChecked(Self.app, .frozen), now: t1 + .microseconds(500)).isEmpty)
    }

    @Test func aFreezerThatCannotFreezeFallsBackToSignalsAsADecisionThenGivesUp() {
        var (c, t0) = Self.freezing()
        let failed = c.handle(.freezeStarted(Self.app, partsAwaited: 1, own: .failed("x/cgroup.freeze: Permission denied")), now: t0)
        let d = Self.decisions(failed)
        #expect(d.map(\.kind) == [.policy])
        #expect(d.first?.reason == .freezeFallback)
        #expect(d.first?.detail == .freezeFellBack(error: "x/cgroup.freeze: Permission denied"))
        #expect(d.first?.state == .background)
        #expect(failed.contains { if case .freezeWithSignals(Self.app, _) = $0 { return true } else { return false } })
        // SIGSTOP sent, not all stopped yet: looked at from the first delay again.
        #expect(c.handle(.freezeChecked(Self.app, .notYet), now: t0).isEmpty)
        let due = t0 + .microseconds(500)
        #expect(Self.look(&c, at: due) == due + .milliseconds(1))
        #expect(Self.suspends(c.handle(.freezeChecked(Self.app, .frozen), now: due)))

        // Another freeze whose fallback fails too: given up, `freeze-failed` (thawed, never suspended).
        var (c2, t1) = Self.freezing()
        _ = c2.handle(.freezeStarted(Self.app, partsAwaited: 1, own: .failed("write failed")), now: t1)
        let gaveUp = c2.handle(.freezeChecked(Self.app, .failed("kill failed")), now: t1)
        #expect(Self.decisions(gaveUp).map(\.reason) == [.freezeFailed])
        #expect(!Self.suspends(gaveUp))
        #expect(c2.lifecycle.app(Self.app, now: t1)?.state == .background)
    }
}
