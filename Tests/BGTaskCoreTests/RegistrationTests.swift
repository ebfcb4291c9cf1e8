import BGTaskCore
import Testing

/// Manifests coming and going, launch failures and configuration reloads.
@Suite struct RegistrationTests {
    @Test func unregisteringAStoppedAppForgetsIt() {
        var h = Harness()
        #expect(h.send(.appUnregistered(mail)).isEmpty)
        #expect(h.snapshot(mail) == nil)
        #expect(h.machine.appIDs == [music, terminal])
        #expect(h.send(.foregroundRequested(mail, exclusive: true)).replies == [.failure(.noSuchApp)])
    }

    @Test func unregisteringARunningAppTerminatesItAndForgetsItAtExit() {
        var h = Harness()
        h.launchActive(mail, pid: 12)
        let actions = h.send(.appUnregistered(mail))
        #expect(actions.sequence == [Step(.willTerminate, .active)])
        #expect(actions.decisions(.terminate).first?.reason == .manifestRemoved)
        #expect(h.snapshot(mail) != nil)
        h.send(.processExited(mail, pid: 12))
        #expect(h.snapshot(mail) == nil)
    }

    @Test func reRegisteringKeepsStateAndUpdatesTheManifest() {
        var h = Harness()
        h.launchActive(mail)
        h.send(.appRegistered(AppManifest(id: mail, backgroundModes: [.voip])))
        #expect(h.state(mail) == .active)
        #expect(h.snapshot(mail)?.backgroundModes == [.voip])
        let actions = h.send(.activityRequested(mail, connection: connA, mode: .voip))
        #expect(actions.decisions(.grant).count == 1)
    }

    @Test func launchFailureReturnsToNotRunning() {
        var h = Harness()
        h.send(.launchRequested(mail, background: false, exclusive: true))
        let failed = h.send(.launchFailed(mail, message: "exec: No such file or directory"))
        #expect(failed.decisions.first?.reason == .launchFailed)
        #expect(failed.decisions.first?.severity == .warning)
        #expect(h.snapshot(mail)?.launching == false)
        #expect(h.machine.nextDeadline == nil)
    }

    @Test func terminatingALaunchThatNeverStartedCancelsIt() {
        var h = Harness()
        h.send(.launchRequested(mail, background: false, exclusive: true))
        let cancel = h.send(.terminateRequested(mail))
        #expect(cancel.kills == [mail])
        #expect(h.snapshot(mail)?.launching == false)
        #expect(h.snapshot(mail)?.terminating == false)
        // Stopping what is stopped succeeds and decides nothing (systemd's StopUnit).
        let again = h.send(.terminateRequested(mail))
        #expect(again.replies == [.ok])
        #expect(again.decisions.isEmpty)
    }

    @Test func terminatingASpawnedAppThatHasNotCheckedInSignalsIt() {
        var h = Harness()
        h.send(.launchRequested(mail, background: false, exclusive: true))
        h.send(.appLaunched(mail, pid: 40))
        #expect(h.send(.terminateRequested(mail)).sigterms == [mail])
        #expect(h.send(.appCheckedIn(mail, connection: connA, pid: 40)).replies == [.invalidState(.notRunning)])
        h.send(.processExited(mail, pid: 40))
        #expect(h.snapshot(mail)?.terminating == false)
        #expect(h.state(mail) == .notRunning)
    }

    @Test func reloadedConfigurationAppliesToNewDeadlines() {
        var h = Harness()
        h.send(.configurationChanged(LifecycleConfig(didEnterBackgroundTimeout: .seconds(1))))
        #expect(h.machine.config.didEnterBackgroundTimeout == .seconds(1))
        h.launchActive(mail)
        let t0 = h.now
        _ = h.background(mail)
        #expect(h.machine.nextDeadline == t0 + .seconds(1))
    }
}
