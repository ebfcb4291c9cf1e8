import BGTaskCore
import Testing

/// SPEC §9 `FreezerBackend=none` (a dry run): terminations are decided and recorded, none is started; the
/// app keeps its process and its state; the daemon's stop does not wait for exits that will not come.
@Suite struct DryRunTests {
    private var dry: LifecycleConfig {
        var c = LifecycleConfig.default
        c.dryRun = true
        return c
    }

    @Test func aTerminateIsRecordedButNothingIsSignalled() {
        var h = Harness(config: dry)
        h.launchActive(mail)
        let t = h.send(.terminateRequested(mail))
        #expect(t.replies == [.ok])
        #expect(t.decisions(.terminate).map(\.reason) == [.userRequest])
        #expect(t.sigterms.isEmpty && t.kills.isEmpty && t.events.isEmpty, "\(t)")
        #expect(h.state(mail) == .active && h.snapshot(mail)?.pid == 100)
        // No escalation later either.
        let later = h.after(.minutes(1))
        #expect(later.sigterms.isEmpty && later.kills.isEmpty)
    }

    @Test func aSuspendedAppPastItsBudgetIsNotKilled() {
        var h = Harness(config: dry)
        h.launchActive(terminal)
        _ = h.background(terminal)
        let end = h.after(.minutes(1))
        #expect(end.kills.isEmpty && end.sigterms.isEmpty, "\(end)")
        #expect(h.snapshot(terminal)?.pid == 100)
    }

    @Test func theStopEndsAtOnceLeavingTheAppsRunning() {
        var h = Harness(config: dry)
        h.launchActive(mail)
        let stop = h.send(.stopRequested)
        #expect(stop.sigterms.isEmpty && stop.kills.isEmpty && stop.events.isEmpty, "\(stop)")
        #expect(stop.decisions(.terminate).map(\.reason) == [.daemonStopping])
        #expect(stop.contains { if case .stopFinished(let left) = $0 { return left == [mail] } else { return false } })
    }

    @Test func withoutADryRunTheSameTerminateSignals() {
        var h = Harness()
        h.launchActive(terminal)
        #expect(h.send(.terminateRequested(terminal)).sigterms == [terminal])
    }
}
