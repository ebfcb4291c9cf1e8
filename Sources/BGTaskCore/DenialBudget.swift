/// The denial budget (issue 11, point 2 for denials): how fast one caller may be refused.
///
/// SPEC §11 journals every `deny` one by one, so a client looping a refused call could fill journald's
/// rate limit on its own. The daemon does not coalesce denials; it slows the caller instead: denied calls
/// are counted per calling uid (root included) and for all callers together per interval. Past
/// `perUIDBurst` (the uid's count) or `globalBurst` (everyone's), a connection whose call was just denied
/// gets its reply and is then not read until the interval ends (``Verdict/pause``); the shell does that
/// (flow control, like the journal queue's pause). A uid paused more often in one interval than it may hold
/// connections (`maxConnectionsPerUID`) is reconnecting to get round the pause: its new connections are then
/// held from the start too (``holdsNewConnections(uid:)``), and so are those of every uid paused once the
/// global burst is spent; up to then a uid's other work is untouched.
///
/// Intervals are fixed windows: one starts at the first denial after the previous one ended and lasts
/// `interval`. Pure: no clock (every input carries `now`), no I/O; the shell arms one timer for
/// ``nextDeadline`` (only while something is paused) and feeds ``deadlineReached(now:)``, which says
/// whether the paused connections may be read again. Early or late wake-ups are harmless.
public struct DenialBudget: Sendable {
    /// The budget's settings (`[Journal]` of bgtaskd.conf).
    public struct Limits: Hashable, Sendable {
        /// `JournalDenialBurst=`.
        public var perUIDBurst: Int
        /// `JournalDenialGlobalBurst=`.
        public var globalBurst: Int
        /// `JournalAssertionIntervalSec=` (the journal budget's interval).
        public var interval: TimeSpan
        /// `MaxConnectionsPerUser=`: past this many pauses of one uid in an interval, its new connections
        /// are held from the start.
        public var maxConnectionsPerUID: Int

        /// The given limits (negative bursts count as 0; the interval is at least 1 µs).
        public init(perUIDBurst: Int = 100, globalBurst: Int = 1000, interval: TimeSpan = .seconds(30),
                    maxConnectionsPerUID: Int = 128)
        {
            self.perUIDBurst = max(0, perUIDBurst)
            self.globalBurst = max(0, globalBurst)
            self.interval = max(interval, .microseconds(1))
            self.maxConnectionsPerUID = max(0, maxConnectionsPerUID)
        }
    }

    /// What to do with the connection whose call was just denied.
    public enum Verdict: Hashable, Sendable {
        /// Keep reading it.
        case serve
        /// Do not read it until ``Pause/until``.
        case pause(Pause)
    }

    /// A connection paused.
    public struct Pause: Hashable, Sendable {
        /// When its interval ends (the connection is read again then).
        public var until: Instant
        /// The first pause of this uid in the interval (the shell journals one entry for it).
        public var firstOfUID: Bool
        /// The uid's denials in the interval so far, this one included.
        public var uidDenials: Int
        /// Everyone's denials in the interval so far, this one included.
        public var totalDenials: Int
        /// When the interval began.
        public var intervalStart: Instant
        /// The global burst, not only the uid's, was spent.
        public var global: Bool
        /// The uid's new connections are held from now on until the interval ends (it reconnects).
        public var holdNewConnections: Bool

        public init(until: Instant, firstOfUID: Bool, uidDenials: Int, totalDenials: Int, intervalStart: Instant, global: Bool,
                    holdNewConnections: Bool = false)
        {
            self.until = until
            self.firstOfUID = firstOfUID
            self.uidDenials = uidDenials
            self.totalDenials = totalDenials
            self.intervalStart = intervalStart
            self.global = global
            self.holdNewConnections = holdNewConnections
        }
    }

    /// The settings in force; a change applies from the next interval on.
    public var limits: Limits
    private var windowStart: Instant?
    private var windowLimits: Limits
    private var total = 0
    private var perUID: [UInt32: Int] = [:]
    /// Uids with a connection paused in this interval, and how many pauses.
    private var pausedUIDs: [UInt32: Int] = [:]
    /// Pauses since start (Stats' `connectionsPaused`).
    public private(set) var pauses = 0

    /// A budget with `limits`, nothing counted yet.
    public init(limits: Limits = Limits()) {
        self.limits = limits
        self.windowLimits = limits
    }

    /// When the current interval ends, if a connection is paused until then (the shell's timer).
    public var nextDeadline: Instant? {
        guard let windowStart, !pausedUIDs.isEmpty else { return nil }
        return windowStart + windowLimits.interval
    }

    /// Whether a connection of `uid` is paused in this interval.
    public func isPaused(uid: UInt32) -> Bool { pausedUIDs[uid] != nil }

    /// Whether new connections of `uid` are to be held until the interval ends: it was paused more often
    /// than it may hold connections, so it connects again to get round the pause; or it was paused once
    /// everyone's burst was spent (then only the connections open already may each be refused once more).
    public func holdsNewConnections(uid: UInt32) -> Bool {
        guard let paused = pausedUIDs[uid] else { return false }
        return paused > windowLimits.maxConnectionsPerUID || total > windowLimits.globalBurst
    }

    /// A call of `uid` was denied (and its `deny` journaled) at `now`. `released` is true when an interval
    /// that had paused connections ended before `now` (read them again first).
    public mutating func denied(uid: UInt32, now: Instant) -> (verdict: Verdict, released: Bool) {
        let released = closeWindowIfOver(now: now)
        if windowStart == nil {
            windowStart = now
            windowLimits = limits
        }
        total += 1
        let mine = perUID[uid, default: 0] + 1
        perUID[uid] = mine
        let overUID = mine > windowLimits.perUIDBurst
        let overGlobal = total > windowLimits.globalBurst
        guard overUID || overGlobal, let start = windowStart else { return (.serve, released) }
        let paused = pausedUIDs[uid, default: 0] + 1
        pausedUIDs[uid] = paused
        pauses += 1
        let pause = Pause(until: start + windowLimits.interval, firstOfUID: paused == 1, uidDenials: mine, totalDenials: total,
                          intervalStart: start, global: overGlobal && !overUID,
                          holdNewConnections: overGlobal || paused > windowLimits.maxConnectionsPerUID)
        return (.pause(pause), released)
    }

    /// The shell's timer fired: true when the interval is over and its paused connections may be read again.
    public mutating func deadlineReached(now: Instant) -> Bool {
        closeWindowIfOver(now: now)
    }

    private mutating func closeWindowIfOver(now: Instant) -> Bool {
        guard let windowStart, now >= windowStart + windowLimits.interval else { return false }
        let hadPaused = !pausedUIDs.isEmpty
        self.windowStart = nil
        total = 0
        perUID.removeAll(keepingCapacity: true)
        pausedUIDs.removeAll(keepingCapacity: true)
        return hadPaused
    }
}
