import BGTaskCore
import Testing

/// SPEC §9 (the signal freezer tells the truth): an app is reported `suspended`, and its `suspend`
/// decision recorded, only once the shell reports the freeze done (`freezeConfirmed`).
@Suite struct FreezeConfirmationTests {
    /// mail, launched, sent to the background and acknowledged: its freeze ordered, not yet confirmed.
    private func freezing() -> Harness {
        var h = Harness()
        h.confirmFreezes = false
        h.launchActive(mail)
        let dib = h.background(mail)
        let ack = h.after(.seconds(1), .eventAcknowledged(dib?.id ?? EventID(0)))
        #expect(ack.freezes == [mail])
        return h
    }

    @Test func aSuspensionIsRecordedAndReportedOnlyOnceTheFreezeIsConfirmed() {
        var h = freezing()
        #expect(h.log.decisions(.suspend).isEmpty)
        #expect(h.state(mail) == .background)
        #expect(h.snapshot(mail)?.lastDecision?.kind == .background)

        let confirmed = h.after(.milliseconds(30), .freezeConfirmed(mail))
        #expect(confirmed.decisions.map(\.kind) == [.suspend])
        #expect(confirmed.decisions(.suspend).first?.reason == .noAssertions)
        #expect(confirmed.decisions(.suspend).first?.previousState == .background)
        #expect(confirmed.decisions(.suspend).first?.state == .suspended)
        #expect(confirmed.replies.isEmpty)
        #expect(h.state(mail) == .suspended)
        #expect(h.snapshot(mail)?.lastDecision?.kind == .suspend)
        // Once only.
        #expect(h.send(.freezeConfirmed(mail)).isEmpty)
    }

    @Test func aThawBeforeTheConfirmationRecordsTheSuspensionFirstAndALateConfirmationChangesNothing() {
        var h = freezing()
        let foreground = h.send(.foregroundRequested(mail, exclusive: true))
        #expect(Array(foreground.decisions.map(\.kind).prefix(2)) == [.suspend, .resume])
        #expect(foreground.thaws == [mail])
        #expect(h.state(mail) == .active)
        // The confirmation of the freeze that was called off comes late: nothing happens.
        #expect(h.send(.freezeConfirmed(mail)).isEmpty)
        #expect(h.state(mail) == .active)
        #expect(h.log.decisions(.suspend).count == 1)
    }

    @Test func anAppThatExitsWhileItsFreezeIsPendingIsRecordedSuspendedThenGone() {
        var h = freezing()
        let exit = h.send(.processExited(mail, pid: 100))
        #expect(exit.decisions.map(\.kind) == [.suspend, .terminate])
        #expect(exit.decisions(.terminate).first?.previousState == .suspended)
        #expect(h.state(mail) == .notRunning)
        #expect(h.send(.freezeConfirmed(mail)).isEmpty)
    }

    @Test func aConfirmationForAnAppNotBeingFrozenIsIgnored() {
        var h = Harness()
        h.confirmFreezes = false
        #expect(h.send(.freezeConfirmed(mail)).isEmpty)
        h.launchActive(mail)
        #expect(h.send(.freezeConfirmed(mail)).isEmpty)
        #expect(h.state(mail) == .active)
    }
}
