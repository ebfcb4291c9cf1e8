// SPEC §14, a freeze that does not complete (a process in uninterruptible sleep: FUSE, NFS, a driver) and a
// cgroup thawed behind the daemon's back. The freezers only report "frozen" or "failed"; the time limit is
// the core's deadline.
extension LifecycleMachine {
    /// `FreezeTimeoutSec` passed and the freeze is not confirmed: ask the shell which processes did not stop.
    mutating func freezeTimeoutDue(_ i: Int) {
        guard records[i].state == .suspended, records[i].heldSuspend != nil, records[i].termination == nil else { return }
        emit(.inspectFreeze(records[i].id, processes(i)))
    }

    /// The shell's answer to ``Action/inspectFreeze(_:_:)``. Nothing stalled: the freeze is done. Else it is
    /// abandoned: the app is thawed and stays `background` (its `suspend` was never recorded), tried again
    /// after `FreezeRetrySec`; the third time in a row it is terminated.
    mutating func freezeStalled(_ app: AppID, _ stalled: [StalledProcess]) {
        guard let i = slots[app], records[i].state == .suspended, records[i].heldSuspend != nil,
              records[i].termination == nil
        else { return }
        guard !stalled.isEmpty else { return freezeConfirmed(app) }
        records[i].device.freezeTimeouts += 1
        let attempt = records[i].device.freezeTimeouts
        let last = attempt >= 3
        abandonFreeze(i, reason: .freezeTimeout, .freezeAbandoned(
            stalled, after: nonNegative(config.freezeTimeout), attempt: attempt,
            retryIn: last ? nil : nonNegative(config.freezeRetry)))
        if last {
            records[i].device.freezeTimeouts = 0
            beginTermination(i, .freezeTimeout, .freezeTimedOut(times: attempt, stalled: stalled))
        }
    }

    /// The shell could not make the freeze (a write failed): the app is thawed (what did freeze of it) and
    /// stays `background`, tried again after `FreezeRetrySec`.
    mutating func freezeFailed(_ app: AppID, error: String) {
        guard let i = slots[app], records[i].state == .suspended, records[i].heldSuspend != nil,
              records[i].termination == nil
        else { return }
        abandonFreeze(i, reason: .freezeFailed, .freezeNotMade(error: error, retryIn: nonNegative(config.freezeRetry)))
    }

    /// Calls off a freeze never confirmed: thawed with a `policy` decision (no `suspend` was recorded, so
    /// no `resume` either), back in the background with the budget it had, the retry armed.
    mutating func abandonFreeze(_ i: Int, reason: Reason, _ detail: DecisionDetail) {
        let app = records[i].id
        records[i].heldSuspend = nil
        records[i].state = .background
        deadlines.cancel(.freezeTimeout(app))
        let retryAt = now + nonNegative(config.freezeRetry)
        records[i].device.retryAt = retryAt
        deadlines.arm(.freezeRetry(app), at: retryAt)
        emit(.thaw(app, processes(i), decision(
            .policy, reason, i, previous: .background, remaining: remaining(i), severity: .warning, detail)))
        for notification in records[i].notifications.drain() {
            deliver(i, .notification, name: notification.name, payload: notification.payload)
        }
        armBudget(i)
    }

    /// Someone else thawed the cgroup of an app the core holds frozen (its freeze confirmed): frozen again at
    /// once, one `suspend` decision (`thawed-externally`) once that freeze is confirmed.
    mutating func thawedExternally(_ app: AppID) {
        guard let i = slots[app], records[i].state == .suspended, records[i].heldSuspend == nil,
              records[i].termination == nil
        else { return }
        freezeNow(i, reason: .thawedExternally, .refrozenAfterExternalThaw)
    }

    /// `FreezeRetrySec` after an abandoned freeze.
    mutating func freezeRetryDue(_ i: Int) {
        records[i].device.retryAt = nil
        maybeSuspend(i)
    }
}

extension LifecycleMachine {
    /// The app comes to the foreground: no lock deferral, lock recheck or freeze retry outlives its stay
    /// in the background (a freeze timeout still pending is called off by the thaw).
    mutating func leaveBackgroundForDevice(_ i: Int) {
        endLockDeferral(i)
        let app = records[i].id
        deadlines.cancel(.lockRecheck(app))
        deadlines.cancel(.freezeRetry(app))
        records[i].device.holdsLocks = false
        records[i].device.retryAt = nil
        records[i].device.freezeTimeouts = 0
    }
}
