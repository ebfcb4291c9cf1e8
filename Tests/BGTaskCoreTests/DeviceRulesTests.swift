import BGTaskCore
import Testing

/// SPEC §14: contended locks, a freeze that does not complete, a cgroup thawed behind the daemon's back.
/// Time is stepped by hand to each rule's boundary.
@Suite struct DeviceRulesTests {
    static let waited = LockContention(kind: "FLOCK", device: "fe:00", inode: 1234, holder: 100, waiter: 555)
    static let contended = LockObservation(held: 1, contended: [waited])
    static let heldQuietly = LockObservation(held: 1)

    /// mail in the background, acknowledged at t = 1 s: its suspension is due (locks answered from `locks`).
    private func due(_ locks: LockObservation = LockObservation(), confirm: Bool = true) -> (Harness, [Action]) {
        var h = Harness()
        h.confirmFreezes = confirm
        h.locks[mail] = locks
        h.launchActive(mail)
        let dib = h.background(mail)
        let ack = h.after(.seconds(1), .eventAcknowledged(dib?.id ?? EventID(0)))
        return (h, ack)
    }

    private func lockChecks(_ actions: [Action]) -> [AppID] {
        actions.compactMap { if case .observeLocks(let app, _) = $0 { app } else { nil } }
    }

    // MARK: - Contended locks

    @Test func aLockFreeAppIsFrozenAfterOneLookAndNeverLookedAtAgain() {
        var (h, ack) = due()
        #expect(lockChecks(ack) == [mail])
        #expect(ack.freezes == [mail])
        #expect(h.state(mail) == .suspended)
        // No recheck while it holds no lock: nothing is due, ever.
        #expect(h.machine.nextDeadline == nil)
        #expect(lockChecks(h.after(.minutes(10))).isEmpty)
    }

    @Test func anAppHoldingAContendedLockIsNotFrozenAndIsTerminatedAtTheDeferralsEnd() {
        var (h, ack) = due(Self.contended)
        #expect(ack.freezes.isEmpty)
        #expect(h.state(mail) == .background)
        let deferral = ack.decisions(.policy)
        #expect(deferral.map(\.reason) == [.holdsContendedLock])
        #expect(deferral.first?.detail == .suspensionDeferredForLocks(
            [Self.waited], recheckIn: .seconds(1), terminateIn: .seconds(10)))
        // Tried again every LockRecheckSec, journaled once.
        let recheck = h.after(.seconds(1))
        #expect(lockChecks(recheck) == [mail])
        #expect(recheck.decisions.isEmpty)
        // At 9.999 s after the contention was seen: not terminated.
        for _ in 2...9 { h.after(.seconds(1)) }
        let before = h.after(.seconds(1) - .oneMicrosecond)
        #expect(before.decisions(.terminate).isEmpty)
        #expect(h.snapshot(mail)?.terminating == false)
        // At 10 s: one more look, still contended: terminated.
        let end = h.after(.oneMicrosecond)
        #expect(lockChecks(end) == [mail])
        let terminate = end.decisions(.terminate)
        #expect(terminate.map(\.reason) == [.contendedLock])
        #expect(terminate.first?.detail == .willTerminateSent(
            .contendedLock([Self.waited], after: .seconds(10)), sigtermIn: .seconds(5)))
        #expect(h.log.freezes.isEmpty)
        #expect(h.log.decisions(.suspend).isEmpty)
    }

    @Test func aLockReleasedDuringTheDeferralLetsTheFreezeHappenAtTheNextLook() {
        var (h, _) = due(Self.contended)
        h.after(.seconds(3))
        h.locks[mail] = LockObservation()
        let recheck = h.after(.seconds(1))
        #expect(recheck.freezes == [mail])
        #expect(h.state(mail) == .suspended)
        // The deferral's end terminates nothing.
        #expect(h.after(.seconds(20)).decisions(.terminate).isEmpty)
        #expect(h.state(mail) == .suspended)
    }

    @Test func aFrozenLockHolderIsResumedWhenSomeoneWaitsAndTerminatedIfItStillHoldsItAfterTheDeferral() {
        var (h, ack) = due(Self.heldQuietly)
        #expect(ack.freezes == [mail])
        #expect(h.state(mail) == .suspended)
        // Its locks are looked at every LockRecheckSec while it is frozen and holds one.
        #expect(h.machine.nextDeadline == Instant.zero + .seconds(2))
        #expect(lockChecks(h.after(.seconds(1) - .oneMicrosecond)).isEmpty)
        let look = h.after(.oneMicrosecond)
        #expect(lockChecks(look) == [mail])
        #expect(look.thaws.isEmpty)
        // Someone starts waiting: resumed into the background.
        h.locks[mail] = Self.contended
        let resumed = h.after(.seconds(1))
        #expect(resumed.thaws == [mail])
        #expect(resumed.decisions(.resume).map(\.reason) == [.lockContended])
        #expect(resumed.decisions(.resume).first?.detail == .resumedForContendedLock([Self.waited], terminateIn: .seconds(10)))
        #expect(h.state(mail) == .background)
        // Still holding it 10 s later: terminated.
        for _ in 1...9 { #expect(h.after(.seconds(1)).decisions(.terminate).isEmpty) }
        #expect(h.after(.seconds(1)).decisions(.terminate).map(\.reason) == [.contendedLock])
    }

    @Test func aResumedLockHolderThatLetsGoIsFrozenAgain() {
        var (h, _) = due(Self.heldQuietly)
        h.locks[mail] = Self.contended
        h.after(.seconds(1))
        #expect(h.state(mail) == .background)
        h.locks[mail] = LockObservation()
        let refreeze = h.after(.seconds(1))
        #expect(refreeze.freezes == [mail])
        #expect(h.state(mail) == .suspended)
        #expect(h.machine.nextDeadline == nil)
    }

    @Test func theForegroundEndsADeferral() {
        var (h, _) = due(Self.contended)
        h.after(.seconds(2), .foregroundRequested(mail, exclusive: true))
        #expect(h.state(mail) == .active)
        #expect(h.after(.seconds(30)).decisions(.terminate).isEmpty)
    }

    // MARK: - A freeze that does not complete

    static let stuck = [StalledProcess(pid: 100, name: "cat", wchan: "request_wait_answer")]

    private func inspections(_ actions: [Action]) -> [AppID] {
        actions.compactMap { if case .inspectFreeze(let app, _) = $0 { app } else { nil } }
    }

    @Test func aFreezeNotConfirmedWithinTheTimeoutIsAbandonedAndTheAppNeverReportedSuspended() {
        var (h, ack) = due(confirm: false)
        #expect(ack.freezes == [mail])
        #expect(inspections(h.after(.seconds(2) - .oneMicrosecond)).isEmpty)
        #expect(h.state(mail) == .background)
        let timeout = h.after(.oneMicrosecond)
        #expect(inspections(timeout) == [mail])
        let abandoned = h.send(.freezeStalled(mail, Self.stuck))
        #expect(abandoned.thaws == [mail])
        #expect(abandoned.decisions.map(\.kind) == [.policy])
        #expect(abandoned.decisions.first?.reason == .freezeTimeout)
        #expect(abandoned.decisions.first?.detail == .freezeAbandoned(
            Self.stuck, after: .seconds(2), attempt: 1, retryIn: .seconds(30)))
        #expect(h.state(mail) == .background)
        #expect(h.log.decisions(.suspend).isEmpty)
        #expect(h.log.decisions(.resume).isEmpty)
        // A late confirmation of the abandoned freeze changes nothing.
        #expect(h.send(.freezeConfirmed(mail)).isEmpty)
        #expect(h.state(mail) == .background)
    }

    @Test func anAbandonedFreezeIsRetriedAfterFreezeRetrySecAndTheThirdTimeoutInARowTerminates() {
        var (h, _) = due(confirm: false)
        for attempt in 1...3 {
            h.after(.seconds(2))
            let abandoned = h.send(.freezeStalled(mail, Self.stuck))
            #expect(abandoned.decisions(.policy).first?.reason == .freezeTimeout)
            if attempt < 3 {
                #expect(abandoned.decisions(.terminate).isEmpty)
                // Another reason to freeze meanwhile (an assertion ends) waits for the retry too.
                #expect(h.after(.seconds(30) - .oneMicrosecond).freezes.isEmpty)
                #expect(h.after(.oneMicrosecond).freezes == [mail])
            } else {
                let terminate = abandoned.decisions(.terminate)
                #expect(terminate.map(\.reason) == [.freezeTimeout])
                #expect(terminate.first?.detail == .willTerminateSent(
                    .freezeTimedOut(times: 3, stalled: Self.stuck), sigtermIn: .seconds(5)))
                // Thawed before it is told to terminate.
                #expect(abandoned.thaws == [mail])
            }
        }
        #expect(h.log.decisions(.suspend).isEmpty)
    }

    @Test func aConfirmedFreezeResetsTheCount() {
        var (h, _) = due(confirm: false)
        h.after(.seconds(2))
        h.send(.freezeStalled(mail, Self.stuck))
        h.after(.seconds(30))
        #expect(h.send(.freezeConfirmed(mail)).decisions(.suspend).count == 1)
        h.after(.seconds(1), .foregroundRequested(mail, exclusive: true))
        let dib = h.background(mail)
        h.after(.seconds(1), .eventAcknowledged(dib?.id ?? EventID(0)))
        for _ in 1...2 {
            h.after(.seconds(2))
            #expect(h.send(.freezeStalled(mail, Self.stuck)).decisions(.terminate).isEmpty)
            h.after(.seconds(30))
        }
    }

    @Test func anInspectionThatFindsNothingStalledConfirmsTheFreeze() {
        var (h, _) = due(confirm: false)
        h.after(.seconds(2))
        let done = h.send(.freezeStalled(mail, []))
        #expect(done.decisions(.suspend).count == 1)
        #expect(h.state(mail) == .suspended)
    }

    @Test func aFailedFreezeIsNeverReportedSuspended() {
        var (h, _) = due(confirm: false)
        let failed = h.send(.freezeFailed(mail, error: "cannot write x/cgroup.freeze: Read-only file system"))
        #expect(failed.thaws == [mail])
        #expect(failed.decisions.map(\.kind) == [.policy])
        #expect(failed.decisions.first?.reason == .freezeFailed)
        #expect(h.state(mail) == .background)
        #expect(h.log.decisions(.suspend).isEmpty)
        #expect(h.after(.seconds(30)).freezes == [mail])
    }

    // MARK: - Thawed behind the daemon's back

    @Test func anAppThawedExternallyIsFrozenAgainWithOneDecision() {
        var (h, _) = due()
        #expect(h.state(mail) == .suspended)
        let again = h.after(.milliseconds(5), .thawedExternally(mail))
        #expect(again.freezes == [mail])
        let suspend = again.decisions(.suspend)
        #expect(suspend.map(\.reason) == [.thawedExternally])
        #expect(suspend.first?.detail == .refrozenAfterExternalThaw)
        #expect(again.decisions.count == 1)
        #expect(h.state(mail) == .suspended)
    }

    @Test func anExternalThawOfAnAppNotHeldFrozenChangesNothing() {
        var h = Harness()
        h.launchActive(mail)
        #expect(h.send(.thawedExternally(mail)).isEmpty)
        var (pending, _) = due(confirm: false)
        // Its freeze not confirmed yet: the freeze under way is the answer.
        #expect(pending.send(.thawedExternally(mail)).isEmpty)
    }
}
