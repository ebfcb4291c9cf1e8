import BGTaskCore
import Testing

/// A resume from suspension begins its background period at the reading taken when the app was
/// suspended (it was frozen since): the shell reads the app's CPU once per resume (at its end), not twice.
@Suite struct EnergyResumeTests {
    /// Feeds `input`; returns the measurements the ledger asked for, by decision kind, after feeding them.
    func feed(_ r: inout EnergyLedgerTests.Rig, _ input: Input) -> [(DecisionKind, EnergyMeasurement)] {
        var asked: [(DecisionKind, EnergyMeasurement)] = []
        for d in r.h.send(input).decisions {
            guard let app = d.app, let m = r.ledger.observe(d, at: r.wall) else { continue }
            asked.append((d.kind, m))
            let used = r.ledger.measured(app, m, usage: r.usage[app] ?? 0, at: r.wall)
            if m == .periodEnds { r.periods.append((app, d.kind, used)) }
        }
        return asked
    }

    func suspended() -> EnergyLedgerTests.Rig {
        var r = EnergyLedgerTests.Rig()
        _ = r.send(.launchRequested(mail, background: false, exclusive: false))
        _ = r.send(.appLaunched(mail, pid: 100))
        _ = r.send(.appCheckedIn(mail, connection: connA, pid: 100))
        r.background(mail, burning: 700_000)
        return r
    }

    @Test func aResumeFromSuspensionNeedsNoReadingOfItsOwn() {
        var r = suspended()
        #expect(r.energy(mail).total.backgroundCPUUSec == 700_000)
        let asked = feed(&r, .foregroundRequested(mail, exclusive: true))
        #expect(asked.map(\.1) == [.periodEnds], "\(asked)")
        #expect(r.periods.last?.2 == 0)
        #expect(r.energy(mail).total.backgroundCPUUSec == 700_000)
    }

    @Test func aResumedPeriodIsChargedFromTheSuspensionsReading() {
        var r = suspended()
        // Resumed into the background (a refresh or a notification would do the same): 300 ms of CPU,
        // then suspended again.
        _ = feed(&r, .foregroundRequested(mail, exclusive: true))
        r.background(mail, burning: 300_000)
        #expect(r.energy(mail).total.backgroundCPUUSec == 1_000_000)
    }

    @Test func anAppThatExitedWhileSuspendedIsMeasuredAfreshAtItsNextLaunch() {
        var r = suspended()
        _ = feed(&r, .processExited(mail, pid: 100))
        r.usage[mail] = 50  // a new process, a new counter
        let asked = feed(&r, .launchRequested(mail, background: true, exclusive: false))
            + feed(&r, .appLaunched(mail, pid: 101)) + feed(&r, .appCheckedIn(mail, connection: connA, pid: 101))
        #expect(asked.map(\.1) == [.periodBegins], "\(asked)")
    }
}
