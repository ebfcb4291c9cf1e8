/// SPEC §16 in Background App Refresh: apps closed by the user, standby buckets and their quotas of
/// background wakes (not on external power), the remote-notification rate, and aligned wakes.
extension RefreshMachine {
    static let dayUSec: Int64 = 86_400_000_000

    /// The app's standby bucket at `now`.
    public func bucket(for app: AppID, now: RealtimeInstant) -> StandbyBucket {
        bucket(for: app, now: now, restricted: restricted(app))
    }

    /// `bucket(for:now:)` with the app's `RefreshRestricted=` already looked up.
    func bucket(for app: AppID, now: RealtimeInstant, restricted: Bool) -> StandbyBucket {
        if restricted { return .restricted }
        if foregroundApps.contains(app) { return .active }
        guard let used = state.energy.lastUsed[app], used <= now else { return .rare }
        let age = now.microsecondsSinceEpoch - used.microsecondsSinceEpoch
        if age < config.energy.activeBucket.microseconds { return .active }
        if age < Self.dayUSec { return .workingSet }
        if age < 7 * Self.dayUSec { return .frequent }
        return .rare
    }

    /// Whether the user closed the app and has not launched it since.
    public func isClosedByUser(_ app: AppID) -> Bool { state.energy.closedByUser.contains(app) }

    /// The app's quota wakes within the 24 h before `now`.
    func recentWakes(_ app: AppID, now: RealtimeInstant) -> [RealtimeInstant] {
        (state.energy.wakes[app] ?? []).filter { $0.microsecondsSinceEpoch > now.microsecondsSinceEpoch - Self.dayUSec && $0 <= now }
    }

    /// `nil` when the app may be woken once more within its bucket's quota at `now` (always on external
    /// power); else the instant its oldest counted wake leaves the 24 h window.
    func quotaSpent(_ app: AppID, now: RealtimeInstant) -> RealtimeInstant? {
        guard !onExternalPower, let quota = config.energy.quotas[bucket(for: app, now: now)] else { return nil }
        let recent = recentWakes(app, now: now)
        guard recent.count >= Swift.max(0, quota) else { return nil }
        let oldest = recent.min() ?? now
        return RealtimeInstant(microsecondsSinceEpoch: oldest.microsecondsSinceEpoch + Self.dayUSec)
    }

    /// Counts a wake of the app for a task or a remote notification.
    mutating func noteWake(_ app: AppID, now: RealtimeInstant) {
        guard !config.energy.quotas.isEmpty else { return }
        var recent = recentWakes(app, now: now)
        recent.append(now)
        state.energy.wakes[app] = recent
    }

    /// Why a remote notification may not wake the app (after the refresh policy said it may), or `nil`; an
    /// allowed wake of an app that is not running or suspended is counted.
    mutating func remoteWakeRefusal(_ app: AppID, now: RefreshNow, facts: Facts) -> Reason? {
        if isClosedByUser(app) { return .closedByUser }
        let state = facts(app)?.state ?? .notRunning
        let wakes = state == .notRunning || state == .suspended
        if wakes, quotaSpent(app, now: now.wall) != nil { return .bucketQuota }
        if let rate = config.energy.remoteWakesPerHour {
            var tokens = wakeTokens[app] ?? WakeTokens(tokens: Double(Swift.max(0, rate)), at: now.monotonic)
            let taken = tokens.take(rate: Swift.max(0, rate), now: now.monotonic)
            wakeTokens[app] = tokens
            if !taken { return .wakeRate }
        }
        if wakes { noteWake(app, now: now.wall) }
        return nil
    }

    /// Takes out of `plan` the runs SPEC §16 holds back (the app was closed by the user; its bucket's quota
    /// is spent, for a run that would launch or resume it) as denials, so that they stay pending and are
    /// journaled once; counts one wake per app the rest launch or resume. Returns when a quota frees up.
    mutating func holdBack(_ plan: inout TaskPlan, now: RealtimeInstant, facts: Facts) -> RealtimeInstant? {
        var kept: [PlannedTask] = []
        var freesAt: RealtimeInstant?
        var woken: Set<AppID> = []
        for run in plan.runs {
            let app = run.app
            if isClosedByUser(app) {
                plan.denials.append(PlannedDenial(task: run, reason: .closedByUser))
                continue
            }
            let state = facts(app)?.state ?? .notRunning
            let wakes = (state == .notRunning || state == .suspended) && facts(app)?.terminating != true
            if wakes, !woken.contains(app) {
                if let at = quotaSpent(app, now: now) {
                    plan.denials.append(PlannedDenial(task: run, reason: .bucketQuota))
                    freesAt = freesAt.map { Swift.min($0, at) } ?? at
                    continue
                }
                woken.insert(app)
                noteWake(app, now: now)
            }
            kept.append(run)
        }
        plan.runs = kept
        return freesAt
    }

    /// The wall-clock timer's next instant, aligned up to the next `WakeAlignmentSec` slot boundary.
    func aligned(_ instant: RealtimeInstant?) -> RealtimeInstant? {
        let slot = config.energy.wakeAlignment.microseconds
        guard let instant, slot > 0 else { return instant }
        let t = instant.microsecondsSinceEpoch
        let (q, r) = t.quotientAndRemainder(dividingBy: slot)
        return r == 0 ? instant : RealtimeInstant(microsecondsSinceEpoch: (q + (t >= 0 ? 1 : 0)) * slot)
    }

    mutating func closedByUser(_ app: AppID) -> [RefreshAction] {
        guard config.apps[app] != nil, state.energy.closedByUser.insert(app).inserted else { return [] }
        return [.save(state, reply: nil)]
    }

    mutating func usedByUser(_ app: AppID, now: RefreshNow, facts: Facts) -> [RefreshAction] {
        state.energy.lastUsed[app] = now.wall
        guard state.energy.closedByUser.remove(app) != nil else { return [] }
        deniedNotices[app] = nil
        return [.save(state, reply: nil)] + plan(now: now, facts: facts)
    }
}
