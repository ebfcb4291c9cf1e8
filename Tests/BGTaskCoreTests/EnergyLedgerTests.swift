import BGTaskCore
import Testing

/// SPEC §16: what counts as background time and as a wake, decided by the core's ledger from the
/// lifecycle machine's own decisions; the shell only reads counters when told.
@Suite struct EnergyLedgerTests {
    /// A machine, a ledger fed every decision, and a fake cumulative CPU counter per app.
    struct Rig {
        var h = Harness()
        var ledger = EnergyLedger()
        var usage: [AppID: Int64] = [:]
        var wall = RealtimeInstant(microsecondsSinceEpoch: 1_800_000_000_000_000)
        /// What each period end measured, in order (the `BGTASKD_BACKGROUND_CPU_USEC` of a suspend).
        var periods: [(AppID, DecisionKind, Int64?)] = []

        mutating func send(_ input: Input) -> [Action] {
            let actions = h.send(input)
            account(actions)
            return actions
        }

        mutating func after(_ span: TimeSpan, _ input: Input = .deadlineReached) -> [Action] {
            let actions = h.after(span, input)
            account(actions)
            return actions
        }

        mutating func account(_ actions: [Action]) {
            for d in actions.decisions {
                guard let app = d.app, let m = ledger.observe(d, at: wall) else { continue }
                let used = ledger.measured(app, m, usage: usage[app] ?? 0, at: wall)
                if m == .periodEnds { periods.append((app, d.kind, used)) }
            }
        }

        /// The app runs and uses `cpu` µs of CPU.
        mutating func burn(_ app: AppID, _ cpu: Int64) { usage[app, default: 0] += cpu }

        func energy(_ app: AppID) -> AppEnergy { ledger.energy(of: app, at: wall) }

        /// Sends `app` to the background, lets it use `cpu` µs in its grace window, and acknowledges its
        /// `did-enter-background` (the suspension follows); returns the acknowledgement's actions.
        @discardableResult
        mutating func background(_ app: AppID, burning cpu: Int64) -> [Action] {
            let dib = send(.backgroundRequested(app)).events.first { $0.kind == .didEnterBackground }
            burn(app, cpu)
            guard let dib else { return [] }
            return send(.eventAcknowledged(dib.id))
        }
    }

    @Test func onlyTheTimeBetweenLeavingTheForegroundAndTheFreezeIsCharged() {
        var r = Rig()
        _ = r.send(.launchRequested(mail, background: false, exclusive: false))
        _ = r.send(.appLaunched(mail, pid: 100))
        _ = r.send(.appCheckedIn(mail, connection: connA, pid: 100))
        r.burn(mail, 5_000_000)  // in the foreground: free
        #expect(r.background(mail, burning: 700_000).freezes == [mail])  // CPU in the grace window
        #expect(r.periods.map(\.0) == [mail] && r.periods.map(\.1) == [.suspend] && r.periods.map(\.2) == [700_000])
        #expect(r.energy(mail).total.backgroundCPUUSec == 700_000)
        #expect(r.energy(mail).total.wakes.isEmpty, "leaving the foreground is no wake")
        // Back to the foreground: its CPU there is free again.
        _ = r.send(.foregroundRequested(mail, exclusive: true))
        r.burn(mail, 9_000_000)
        #expect(r.energy(mail).total.backgroundCPUUSec == 700_000)
    }

    @Test func aPeriodEndsWithATerminationOrAReturnToTheForeground() {
        var r = Rig()
        _ = r.send(.launchRequested(mail, background: false, exclusive: false))
        _ = r.send(.appLaunched(mail, pid: 100))
        _ = r.send(.appCheckedIn(mail, connection: connA, pid: 100))
        _ = r.send(.backgroundRequested(mail))
        r.burn(mail, 300)
        _ = r.send(.foregroundRequested(mail, exclusive: true))
        r.burn(mail, 1_000)
        _ = r.send(.backgroundRequested(mail))
        r.burn(mail, 40)
        _ = r.send(.terminateRequested(mail))
        r.burn(mail, 1_000)  // after the termination decision: not measured
        _ = r.send(.processExited(mail, pid: 100))
        #expect(r.periods.map(\.1) == [.foreground, .terminate])
        #expect(r.energy(mail).total.backgroundCPUUSec == 340)
    }

    @Test func wakesAreCountedByCause() {
        var r = Rig()
        // A background launch for a remote notification, then a resume for a bus call.
        _ = r.send(.remoteNotificationReceived(music, payload: nil))
        _ = r.send(.appLaunched(music, pid: 7))
        let launched = r.send(.appCheckedIn(music, connection: connB, pid: 7))
        for e in launched.events where e.needsAck { _ = r.send(.eventAcknowledged(e.id)) }
        _ = r.after(.seconds(31))
        #expect(r.h.state(music) == .suspended)
        _ = r.send(.busCallReceived(music, sender: ":1.5", member: "Activate"))
        #expect(r.h.state(music) == .background)
        let wakes = r.energy(music).total.wakes
        #expect(wakes == [.remoteNotification: 1, .busCall: 1])
        #expect(r.energy(music).last24h.wakes == wakes)
        #expect(r.energy(mail).total.wakes.isEmpty)
    }

    @Test func theLast24HoursForgetWhatIsOlderAndTheTotalKeepsIt() {
        var ledger = EnergyLedger()
        let t0 = RealtimeInstant(microsecondsSinceEpoch: 1_800_000_000_000_000)
        let wake = Decision(
            kind: .resume, reason: .taskScheduled, app: mail, state: .background, previousState: .suspended, detail: .resumed)
        #expect(ledger.observe(wake, at: t0) == .periodBegins)
        ledger.measured(mail, .periodBegins, usage: 100, at: t0)
        let suspend = Decision(
            kind: .suspend, reason: .noAssertions, app: mail, state: .suspended, previousState: .background, detail: .suspended)
        #expect(ledger.observe(suspend, at: t0) == .periodEnds)
        #expect(ledger.measured(mail, .periodEnds, usage: 600, at: t0) == 500)
        let hour = TimeSpan.minutes(60)
        let day = ledger.energy(of: mail, at: t0 + TimeSpan.microseconds(23 * hour.microseconds))
        #expect(day.last24h == EnergyFigures(backgroundCPUUSec: 500, wakes: [.task: 1]))
        let later = ledger.energy(of: mail, at: t0 + TimeSpan.microseconds(25 * hour.microseconds))
        #expect(later.last24h == EnergyFigures())
        #expect(later.total == EnergyFigures(backgroundCPUUSec: 500, wakes: [.task: 1]))
        // Kept accounts continue in a new ledger (a daemon restart).
        let restarted = EnergyLedger(accounts: ledger.accounts)
        #expect(restarted.energy(of: mail, at: t0) == ledger.energy(of: mail, at: t0))
    }

    @Test func aCounterThatCannotBeReadOrWentBackwardsChargesNothing() {
        var ledger = EnergyLedger()
        let t0 = RealtimeInstant(microsecondsSinceEpoch: 0)
        let enter = Decision(
            kind: .background, reason: .userRequest, app: mail, state: .background, previousState: .active,
            detail: .wentToBackground(budget: .seconds(30)))
        let suspend = Decision(
            kind: .suspend, reason: .noAssertions, app: mail, state: .suspended, previousState: .background, detail: .suspended)
        #expect(ledger.observe(enter, at: t0) == .periodBegins)
        ledger.measured(mail, .periodBegins, usage: nil, at: t0)
        #expect(ledger.observe(suspend, at: t0) == nil, "no period is open without a first reading")
        #expect(ledger.observe(enter, at: t0) == .periodBegins)
        ledger.measured(mail, .periodBegins, usage: 900, at: t0)
        #expect(ledger.observe(suspend, at: t0) == .periodEnds)
        #expect(ledger.measured(mail, .periodEnds, usage: 10, at: t0) == 0)
        #expect(ledger.energy(of: mail, at: t0).total.backgroundCPUUSec == 0)
        #expect(WakeCause.allCases.map(\.rawValue) == ["task", "remote-notification", "bus-call", "lock", "user"])
    }
}
