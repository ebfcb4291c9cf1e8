/// The denial budget (issue 11, point 2 for denials): how fast one client may be refused.
///
/// SPEC §11 journals every `deny` one by one, so a client looping a refused call could fill journald's
/// rate limit on its own. The daemon does not coalesce denials; it slows the client instead. Denied calls are
/// counted per calling process (uid and pid of the connection's peer, root included) and for all callers
/// together per interval. Past `perCallerBurst` (the process's count) or `globalBurst` (everyone's), a
/// connection whose call was just denied gets its reply and is then not read until the interval ends
/// (``Verdict/pause``); the shell does that (flow control, like the journal queue's pause).
///
/// Why per process, not per uid: on a phone every app of the user runs as one uid. An app looping a refused
/// call must not get its sibling apps paused when one of them is refused a call once (a paused connection
/// waits with its `Acknowledge` too, and the app would miss its grace window). Other processes of the same
/// uid are touched only once everyone's burst is spent.
///
/// Reconnecting to get round a pause: a process paused more often in one interval than it may hold
/// connections (`maxConnectionsPerUID`) has its new connections held from the start
/// (``NewConnections/caller``). A uid whose processes were paused more than twice that often in all (a client
/// that forks to get new pids) has every new connection of the uid held (``NewConnections/uid``). A single
/// process reconnecting is held as a process long before its uid is.
///
/// Intervals are fixed windows: one starts at the first denial after the previous one ended and lasts
/// `interval`. Pure: no clock (every input carries `now`), no I/O; the shell arms one timer for
/// ``nextDeadline`` (only while something is paused) and feeds ``deadlineReached(now:)``, which says
/// whether the paused connections may be read again. Early or late wake-ups are harmless.
public struct DenialBudget: Sendable, Codable {
    /// The budget's settings (`[Journal]` of bgtaskd.conf).
    public struct Limits: Hashable, Sendable, Codable {
        /// `JournalDenialBurst=`: refusals journaled for one process per interval before it is paused.
        public var perCallerBurst: Int
        /// `JournalDenialGlobalBurst=`.
        public var globalBurst: Int
        /// `JournalAssertionIntervalSec=` (the journal budget's interval).
        public var interval: TimeSpan
        /// `MaxConnectionsPerUser=`: past this many pauses of one process in an interval its new connections
        /// are held from the start; past twice as many pauses of one uid, the uid's.
        public var maxConnectionsPerUID: Int

        /// The given limits (negative bursts count as 0; the interval is at least 1 µs).
        public init(perCallerBurst: Int = 100, globalBurst: Int = 1000, interval: TimeSpan = .seconds(30),
                    maxConnectionsPerUID: Int = 128)
        {
            self.perCallerBurst = max(0, perCallerBurst)
            self.globalBurst = max(0, globalBurst)
            self.interval = max(interval, .microseconds(1))
            self.maxConnectionsPerUID = max(0, maxConnectionsPerUID)
        }
    }

    /// The client a connection belongs to: its peer's uid and pid (SO_PEERCRED).
    public struct Caller: Hashable, Sendable, Codable {
        public var uid: UInt32
        public var pid: Int32

        public init(uid: UInt32, pid: Int32) {
            self.uid = uid
            self.pid = pid
        }
    }

    /// Whose new connections are held until the interval ends.
    public enum NewConnections: Hashable, Sendable, Codable {
        /// Nobody's: only the connection just refused is paused.
        case none
        /// Those of the refused connection's process (it reconnects to get round its pauses).
        case caller
        /// Every connection of the refused connection's uid (its processes were paused too often in all).
        case uid
    }

    /// What to do with the connection whose call was just denied.
    public enum Verdict: Hashable, Sendable {
        /// Keep reading it.
        case serve
        /// Do not read it until ``Pause/until``.
        case pause(Pause)
    }

    /// A connection paused.
    public struct Pause: Hashable, Sendable, Codable {
        /// When its interval ends (the connection is read again then).
        public var until: Instant
        /// The first pause of this uid in the interval (the shell journals one entry for it).
        public var firstOfUID: Bool
        /// The process's denials in the interval so far, this one included.
        public var callerDenials: Int
        /// Everyone's denials in the interval so far, this one included.
        public var totalDenials: Int
        /// When the interval began.
        public var intervalStart: Instant
        /// The global burst, not only the process's, was spent.
        public var global: Bool
        /// Whose new connections are held from now on until the interval ends.
        public var holdNewConnections: NewConnections

        public init(until: Instant, firstOfUID: Bool, callerDenials: Int, totalDenials: Int, intervalStart: Instant,
                    global: Bool, holdNewConnections: NewConnections = .none)
        {
            self.until = until
            self.firstOfUID = firstOfUID
            self.callerDenials = callerDenials
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
    private var perCaller: [Caller: Int] = [:]
    /// Pauses in this interval, per process and per uid.
    private var pausedCallers: [Caller: Int] = [:]
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

    /// Whether a connection of `caller` is paused in this interval.
    public func isPaused(_ caller: Caller) -> Bool { pausedCallers[caller] != nil }

    /// Whose new connections are to be held until the interval ends, for a connection of `caller`'s process
    /// paused now (see the type's notes).
    public func holdsNewConnections(_ caller: Caller) -> NewConnections {
        if let uid = pausedUIDs[caller.uid], uid > 2 * windowLimits.maxConnectionsPerUID { return .uid }
        guard let paused = pausedCallers[caller] else { return .none }
        return paused > windowLimits.maxConnectionsPerUID || total > windowLimits.globalBurst ? .caller : .none
    }

    /// A call of `caller` was denied (and its `deny` journaled) at `now`. `released` is true when an
    /// interval that had paused connections ended before `now` (read them again first).
    public mutating func denied(_ caller: Caller, now: Instant) -> (verdict: Verdict, released: Bool) {
        let released = closeWindowIfOver(now: now)
        if windowStart == nil {
            windowStart = now
            windowLimits = limits
        }
        total += 1
        let mine = perCaller[caller, default: 0] + 1
        perCaller[caller] = mine
        let overCaller = mine > windowLimits.perCallerBurst
        let overGlobal = total > windowLimits.globalBurst
        guard overCaller || overGlobal, let start = windowStart else { return (.serve, released) }
        pausedCallers[caller, default: 0] += 1
        let uidPauses = pausedUIDs[caller.uid, default: 0] + 1
        pausedUIDs[caller.uid] = uidPauses
        pauses += 1
        let pause = Pause(
            until: start + windowLimits.interval, firstOfUID: uidPauses == 1, callerDenials: mine, totalDenials: total,
            intervalStart: start, global: overGlobal && !overCaller, holdNewConnections: holdsNewConnections(caller))
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
        perCaller.removeAll(keepingCapacity: true)
        pausedCallers.removeAll(keepingCapacity: true)
        pausedUIDs.removeAll(keepingCapacity: true)
        return hadPaused
    }
}
