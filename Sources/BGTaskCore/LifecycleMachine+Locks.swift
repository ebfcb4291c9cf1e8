// SPEC §14, contended locks: an app holding a lock another process waits for is not frozen (the waiter would
// hang with it); a frozen app whose lock becomes contended is resumed; either way, still contended after
// `LockDeferralSec`, it is terminated. The shell only reads `/proc/locks` when asked (`observeLocks`): once
// per freeze attempt, and every `LockRecheckSec` only while a frozen or deferred app holds a lock.
extension LifecycleMachine {
    /// Asks the shell for app `i`'s locks (once at a time).
    mutating func observeLocks(_ i: Int) {
        guard !records[i].device.lockCheckPending else { return }
        records[i].device.lockCheckPending = true
        emit(.observeLocks(records[i].id, processes(i)))
    }

    /// The shell's answer to ``Action/observeLocks(_:_:)``.
    mutating func locksObserved(_ app: AppID, _ seen: LockObservation) {
        guard let i = slots[app], records[i].device.lockCheckPending else { return }
        records[i].device.lockCheckPending = false
        guard records[i].termination == nil else { return }
        switch records[i].state {
        case .background:
            // Nothing is due any more (an assertion, the foreground came meanwhile): no deferral either.
            guard suspendable(i), !records[i].manifest.exempt else { return endLockDeferral(i) }
            if seen.contended.isEmpty {
                endLockDeferral(i)
                freezeNow(i)
                noteLocksHeld(i, seen)
            } else if records[i].device.deferralOver {
                terminateForLock(i, seen.contended)
            } else {
                deferSuspension(i, seen.contended)
            }
        case .suspended:
            if seen.contended.isEmpty {
                noteLocksHeld(i, seen)
            } else {
                // Resumed into the background until the lock is released (then frozen again) or the deferral ends.
                startLockDeferral(i, seen.contended)
                resumeHeld(i, reason: .lockContended, .resumedForContendedLock(
                    seen.contended, terminateIn: remainingDeferral(i)))
                armLockRecheck(i)
            }
        case .notRunning, .inactive, .active:
            endLockDeferral(i)
        }
    }

    /// The app holds locks nobody waits for: a frozen one's are looked at again every `LockRecheckSec`.
    mutating func noteLocksHeld(_ i: Int, _ seen: LockObservation) {
        records[i].device.holdsLocks = seen.held > 0
        if seen.held > 0 { armLockRecheck(i) } else { deadlines.cancel(.lockRecheck(records[i].id)) }
    }

    /// Not frozen: the decision is recorded once per deferral (naming the locks and waiters), then the
    /// locks are looked at every `LockRecheckSec`.
    mutating func deferSuspension(_ i: Int, _ contention: [LockContention]) {
        let first = records[i].device.contendedSince == nil
        startLockDeferral(i, contention)
        if first {
            record(.policy, .holdsContendedLock, i, remaining: remaining(i), severity: .notice,
                   .suspensionDeferredForLocks(
                       contention, recheckIn: nonNegative(config.lockRecheck), terminateIn: remainingDeferral(i)))
        }
        armLockRecheck(i)
    }

    /// Starts the deferral clock at the first contention seen (kept while it lasts).
    mutating func startLockDeferral(_ i: Int, _ contention: [LockContention]) {
        records[i].device.contention = contention
        guard records[i].device.contendedSince == nil else { return }
        records[i].device.contendedSince = now
        records[i].device.deferralOver = false
        deadlines.arm(.lockDeferral(records[i].id), at: now + nonNegative(config.lockDeferral))
    }

    /// No lock of the app is waited for any more (or the app left the background).
    mutating func endLockDeferral(_ i: Int) {
        records[i].device.contendedSince = nil
        records[i].device.contention = []
        records[i].device.deferralOver = false
        deadlines.cancel(.lockDeferral(records[i].id))
        if records[i].state != .suspended { deadlines.cancel(.lockRecheck(records[i].id)) }
    }

    func remainingDeferral(_ i: Int) -> TimeSpan {
        guard let since = records[i].device.contendedSince else { return nonNegative(config.lockDeferral) }
        return nonNegative(since + nonNegative(config.lockDeferral) - now)
    }

    mutating func armLockRecheck(_ i: Int) {
        deadlines.arm(.lockRecheck(records[i].id), at: now + nonNegative(config.lockRecheck))
    }

    /// `LockRecheckSec` passed: a deferred app's freeze is tried again; a frozen app's locks are looked at.
    mutating func lockRecheckDue(_ i: Int) {
        guard records[i].termination == nil else { return }
        switch records[i].state {
        case .background where records[i].device.contendedSince != nil:
            maybeSuspend(i)
        case .suspended where records[i].device.holdsLocks:
            observeLocks(i)
        default:
            break
        }
    }

    /// `LockDeferralSec` passed since the contention was first seen: one more look, and if the lock is
    /// still waited for the app is terminated (``locksObserved(_:_:)``).
    mutating func lockDeferralDue(_ i: Int) {
        guard records[i].termination == nil, records[i].device.contendedSince != nil,
              records[i].state == .background
        else { return }
        records[i].device.deferralOver = true
        observeLocks(i)
    }

    mutating func terminateForLock(_ i: Int, _ contention: [LockContention]) {
        let after = records[i].device.contendedSince.map { nonNegative(now - $0) } ?? nonNegative(config.lockDeferral)
        endLockDeferral(i)
        beginTermination(i, .contendedLock, .contendedLock(contention, after: after))
    }
}
