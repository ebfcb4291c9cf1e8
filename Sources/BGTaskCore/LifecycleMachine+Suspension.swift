// SPEC §3: suspension when nothing holds the app, resumption, the grace window and the budget left.
extension LifecycleMachine {
    /// Freezes the app if it is in the background, acknowledged, and nothing holds it: first its locks are
    /// looked at (SPEC §14, ``Action/observeLocks(_:_:)``); the freeze follows their answer
    /// (``locksObserved(_:_:)``) when no other process waits for a lock the app holds.
    mutating func maybeSuspend(_ i: Int) {
        guard suspendable(i) else { return }
        if records[i].manifest.exempt { return keepExempt(i) }
        // An abandoned or failed freeze waits for its retry deadline (`FreezeRetrySec`).
        if let retryAt = records[i].device.retryAt, now < retryAt { return }
        if awaitSnapshots(i) { return }  // SPEC §15: the scenes' snapshots first
        observeLocks(i)
    }

    /// Whether app `i` is due to be frozen: in the background, acknowledged, held by nothing.
    func suspendable(_ i: Int) -> Bool {
        // Read in place: a copy of the record (`let r = records[i]`) retained and released every reference
        // it holds, on each assertion's begin and end.
        records[i].state == .background && records[i].termination == nil && records[i].grace == .none
            && !records[i].holdsBackground
    }

    /// Freezes app `i` now (its locks were looked at); the `suspend` decision (`reason`) is recorded once the
    /// shell confirms the freeze, and the freeze is abandoned if that takes `FreezeTimeoutSec`.
    mutating func freezeNow(_ i: Int, reason: Reason = .noAssertions, _ detail: DecisionDetail = .suspended) {
        let app = records[i].id
        deadlines.cancel(.budgetWarning(app))
        deadlines.cancel(.budgetEnd(app))
        deadlines.cancel(.freezeRetry(app))
        records[i].device.retryAt = nil
        let previous = records[i].state
        records[i].state = .suspended
        let d = decision(.suspend, reason, i, previous: previous, remaining: remaining(i), detail)
        // Recorded when the shell confirms the freeze (`freezeConfirmed`): reported suspended only then.
        records[i].heldSuspend = d
        deadlines.arm(.freezeTimeout(app), at: now + nonNegative(config.freezeTimeout))
        emit(.freeze(app, processes(i), d))
    }

    /// The shell saw the app's freeze done: its `suspend` decision is recorded, the app reported suspended.
    mutating func freezeConfirmed(_ app: AppID) {
        guard let i = slots[app], records[i].state == .suspended, records[i].heldSuspend != nil else { return }
        deadlines.cancel(.freezeTimeout(app))
        records[i].device.freezeTimeouts = 0
        flushHeldSuspend(i)
    }

    /// Records the held `suspend` decision of app `i`, if any: at its confirmation, or when the app leaves
    /// `suspended` before it (thawed, terminated, gone), so that the journal never shows a resume or a
    /// termination of a suspension it did not show.
    mutating func flushHeldSuspend(_ i: Int) {
        guard let held = records[i].heldSuspend else { return }
        records[i].heldSuspend = nil
        emit(.record(held))
    }

    /// Thaws a suspended app into the background and delivers its queued notifications (SPEC §7).
    mutating func thaw(_ i: Int, reason: Reason, _ detail: DecisionDetail = .resumed) {
        let app = records[i].id
        records[i].state = .background
        deadlines.cancel(.freezeTimeout(app))
        emit(.thaw(app, processes(i), decision(.resume, reason, i, previous: .suspended, detail)))
        for notification in records[i].notifications.drain() {
            deliver(i, .notification, name: notification.name, payload: notification.payload)
        }
    }

    /// Thaws a suspended app for an assertion, an activity or a manager hold: no event, and the budget it
    /// had (SPEC §3: only the foreground resets it).
    mutating func resumeHeld(_ i: Int, reason: Reason, _ detail: DecisionDetail = .resumed) {
        thaw(i, reason: reason, detail)
        if records[i].backgroundSince == nil { records[i].backgroundSince = now }
        records[i].grace = .none
        armBudget(i)
    }

    /// Sequence 5: thaw, `did-enter-background`; the caller delivers the event. The app's budget is the one
    /// it had (SPEC §3): the event brings its own (`RefreshTaskBudgetSec`, `ProcessingTaskBudgetSec`).
    mutating func resumeForEvent(_ i: Int, reason: Reason) {
        thaw(i, reason: reason)
        enterBackground(i, freshBudget: false)
    }

    mutating func clearGrace(_ i: Int) {
        if case .awaitingAck(let event?) = records[i].grace { pendingAcks[event] = nil }
        records[i].grace = .none
        deadlines.cancel(.grace(records[i].id))
    }

    /// Background time left at `now`: `nil` unless the app is in the background or suspended.
    func remaining(_ i: Int) -> TimeSpan? {
        remaining(i, at: now)
    }

    /// App `i`'s background time left at `instant`. Reads the record's fields in place: a record passed
    /// whole from `records[i]` is copied first (every table in it retained and released, ~400
    /// instructions; callgrind).
    func remaining(_ i: Int, at instant: Instant) -> TimeSpan? {
        remaining(state: records[i].state, backgroundSince: records[i].backgroundSince, at: instant)
    }

    func remaining(of record: AppRecord, at instant: Instant) -> TimeSpan? {
        remaining(state: record.state, backgroundSince: record.backgroundSince, at: instant)
    }

    private func remaining(state: AppState, backgroundSince: Instant?, at instant: Instant) -> TimeSpan? {
        guard state == .background || state == .suspended, let since = backgroundSince else { return nil }
        return nonNegative(since + nonNegative(config.backgroundTimeBudget) - instant)
    }

    /// App `i`'s ``AppRecord/reportedState``, read in place (not through a copy of the record).
    func reportedState(_ i: Int) -> AppState {
        AppRecord.reported(records[i].state, suspendHeld: records[i].heldSuspend != nil)
    }
}
