import BGTaskCore
import Testing

/// A decision that ends a background period while its app has not run since it was resumed (the foreground
/// decision of a tap on a suspended app, taken before the thaw) is charged from the period's mark without a
/// reading: the shell reads nothing between the call and the thaw.
@Suite struct EnergyUnrunTests {
    /// Feeds `input` as the shell does while the app's thaw waits (every decision after its resume is
    /// observed with `unrunSinceResume`); returns the measurements the ledger asked for.
    func feedBeforeThaw(_ r: inout EnergyLedgerTests.Rig, _ input: Input) -> [EnergyMeasurement] {
        var asked: [EnergyMeasurement] = []
        var resumed = false
        for d in r.h.send(input).decisions {
            guard let app = d.app else { continue }
            let m = r.ledger.observe(d, at: r.wall, unrunSinceResume: resumed)
            if d.kind == .resume { resumed = true }
            guard let m else { continue }
            asked.append(m)
            r.ledger.measured(app, m, usage: r.usage[app] ?? 0, at: r.wall)
        }
        return asked
    }

    @Test func aTapOnASuspendedAppNeedsNoReadingBeforeTheThaw() {
        var r = EnergyResumeTests().suspended()
        #expect(r.energy(mail).total.backgroundCPUUSec == 700_000)
        let asked = feedBeforeThaw(&r, .foregroundRequested(mail, exclusive: true))
        #expect(asked.isEmpty, "\(asked)")
        #expect(r.energy(mail).total.backgroundCPUUSec == 700_000)
        // The next background period is measured from its own beginning.
        r.background(mail, burning: 300_000)
        #expect(r.energy(mail).total.backgroundCPUUSec == 1_000_000)
    }

    @Test func aResumeWithoutTheSuspensionsReadingIsReadOnceBeforeTheThaw() {
        // A ledger that did not see the suspension (a daemon restarted since): the resume's own reading, taken
        // before the thaw, is the period's mark and its end.
        var ledger = EnergyLedger()
        var r = EnergyResumeTests().suspended()
        swap(&ledger, &r.ledger)
        #expect(r.energy(mail).total.backgroundCPUUSec == 0)
        let asked = feedBeforeThaw(&r, .foregroundRequested(mail, exclusive: true))
        #expect(asked == [.periodBegins])
    }
}
