/// SPEC §11's journal budget: which decisions are journaled one by one, and which are counted instead.
///
/// journald drops a service's entries beyond its rate limit (`RateLimitBurst=10000` per 30 s by default),
/// so one app looping Begin/End must not be able to fill it, nor many apps together. Decisions that change
/// an app's state or deny it something are always journaled (``isAlwaysJournaled(_:)``). `grant` and `end`
/// are journaled one by one while the interval's budget lasts: `perAppBurst` per app and `globalBurst` for
/// all apps together; the rest are counted and, when the interval ends, reported in one ``Summary`` per app
/// (at most `maxAppSummaries` of them; the apps beyond share one summary without an app).
///
/// Intervals are fixed windows shared by all apps: one starts at the first `grant`/`end` after the previous
/// one ended and lasts `interval`. Pure: no clock (every input carries `now`), no I/O; the shell arms one
/// timer for ``nextDeadline`` and feeds ``deadlineReached(now:)``. Early or late wake-ups are harmless.
public struct JournalBudget: Sendable, Codable {
    /// The budget's settings (`[Journal]` of bgtaskd.conf).
    public struct Limits: Hashable, Sendable, Codable {
        /// `JournalAssertionBurst=`.
        public var perAppBurst: Int
        /// `JournalAssertionGlobalBurst=`.
        public var globalBurst: Int
        /// `JournalAssertionIntervalSec=`.
        public var interval: TimeSpan
        /// Summaries with an app per interval; the apps beyond share one summary.
        public var maxAppSummaries: Int

        /// The given limits (negative bursts count as 0; the interval is at least 1 µs).
        public init(perAppBurst: Int = 100, globalBurst: Int = 1000, interval: TimeSpan = .seconds(30),
                    maxAppSummaries: Int = 100)
        {
            self.perAppBurst = max(0, perAppBurst)
            self.globalBurst = max(0, globalBurst)
            self.interval = max(interval, .microseconds(1))
            self.maxAppSummaries = max(0, maxAppSummaries)
        }
    }

    /// What to do with one decision's journal entry.
    public enum Verdict: Hashable, Sendable {
        /// Journal it on its own.
        case journal
        /// Count it in the interval's summary instead.
        case coalesce
    }

    /// One `coalesced` entry: the `grant`/`end` decisions of an interval that were not journaled one by one.
    public struct Summary: Hashable, Sendable, Codable {
        /// The app; nil: the apps beyond `maxAppSummaries` (and decisions without an app) together.
        public var app: AppID?
        /// How many apps the summary covers (1 for an app's own summary).
        public var apps: Int
        /// `grant` decisions counted.
        public var granted: Int
        /// `end` decisions counted.
        public var ended: Int
        /// When the interval began.
        public var intervalStart: Instant
        /// When it ended.
        public var intervalEnd: Instant

        /// A summary.
        public init(app: AppID?, apps: Int, granted: Int, ended: Int, intervalStart: Instant, intervalEnd: Instant) {
            self.app = app
            self.apps = apps
            self.granted = granted
            self.ended = ended
            self.intervalStart = intervalStart
            self.intervalEnd = intervalEnd
        }
    }

    private struct Counts: Codable {
        var journaled = 0
        var granted = 0
        var ended = 0
    }

    /// The settings in force; a change applies from the next interval on (already counted entries stay counted).
    public var limits: Limits
    private var windowStart: Instant?
    private var journaledInWindow = 0
    private var perApp: [AppID: Counts] = [:]
    /// Counted decisions that carry no app.
    private var unattributed = Counts()
    private var coalescedInWindow = 0

    /// A budget with `limits`, nothing counted yet.
    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Decisions that are always journaled one by one (SPEC §11): they change an app's state or deny it
    /// something, or they are the budget's own summaries. Only `grant`, `end` and `notify` are not.
    public static func isAlwaysJournaled(_ kind: DecisionKind) -> Bool {
        switch kind {
        case .launch, .foreground, .background, .suspend, .resume, .terminate, .deny, .expire, .runTask, .completeTask,
            .policy, .coalesced:
            return true
        case .grant, .end, .notify:
            return false
        }
    }

    /// Whether the budget counts decisions of `kind` (`grant`, `end`); all others are journaled as they come.
    public static func isBudgeted(_ kind: DecisionKind) -> Bool { kind == .grant || kind == .end }

    /// When the current interval ends, if it has anything to report (the shell's timer).
    public var nextDeadline: Instant? {
        guard let windowStart, coalescedInWindow > 0 else { return nil }
        return windowStart + limits.interval
    }

    /// Decides one decision's entry at `now`. `summaries` are those of an interval that ended before `now`
    /// (journal them first: they are older).
    public mutating func admit(_ kind: DecisionKind, app: AppID?, now: Instant) -> (verdict: Verdict, summaries: [Summary]) {
        guard Self.isBudgeted(kind) else { return (.journal, []) }
        let summaries = closeWindowIfOver(now: now)
        if windowStart == nil { windowStart = now }
        // The app's counts changed in place: one look-up of the app, not a get and a set.
        let verdict: Verdict
        if let app {
            verdict = Self.count(
                kind, in: &perApp[app, default: Counts()], perAppBurst: limits.perAppBurst, globalBurst: limits.globalBurst,
                journaled: &journaledInWindow, coalesced: &coalescedInWindow)
        } else {
            verdict = Self.count(
                kind, in: &unattributed, perAppBurst: nil, globalBurst: limits.globalBurst,
                journaled: &journaledInWindow, coalesced: &coalescedInWindow)
        }
        return (verdict, summaries)
    }

    private static func count(
        _ kind: DecisionKind, in counts: inout Counts, perAppBurst: Int?, globalBurst: Int, journaled: inout Int,
        coalesced: inout Int
    ) -> Verdict {
        if journaled < globalBurst && (perAppBurst.map { counts.journaled < $0 } ?? true) {
            journaled += 1
            counts.journaled += 1
            return .journal
        }
        if kind == .grant { counts.granted += 1 } else { counts.ended += 1 }
        coalesced += 1
        return .coalesce
    }

    /// The shell's timer fired: the summaries of an interval that has ended by `now` (none if it has not).
    public mutating func deadlineReached(now: Instant) -> [Summary] {
        closeWindowIfOver(now: now)
    }

    /// Ends the interval (e.g. at shutdown) and returns its summaries.
    public mutating func closeWindow(now: Instant) -> [Summary] {
        guard let windowStart else { return [] }
        return finish(start: windowStart, end: max(now, windowStart))
    }

    private mutating func closeWindowIfOver(now: Instant) -> [Summary] {
        guard let windowStart else { return [] }
        let end = windowStart + limits.interval
        guard now >= end else { return [] }
        return finish(start: windowStart, end: end)
    }

    private mutating func finish(start: Instant, end: Instant) -> [Summary] {
        var summaries: [Summary] = []
        var rest = Summary(app: nil, apps: 0, granted: unattributed.granted, ended: unattributed.ended,
                           intervalStart: start, intervalEnd: end)
        for (app, c) in perApp.sorted(by: { $0.key < $1.key }) where c.granted + c.ended > 0 {
            if summaries.count < limits.maxAppSummaries {
                summaries.append(Summary(app: app, apps: 1, granted: c.granted, ended: c.ended, intervalStart: start, intervalEnd: end))
            } else {
                rest.apps += 1
                rest.granted += c.granted
                rest.ended += c.ended
            }
        }
        if rest.granted + rest.ended > 0 { summaries.append(rest) }
        windowStart = nil
        journaledInWindow = 0
        coalescedInWindow = 0
        perApp.removeAll(keepingCapacity: true)
        unattributed = Counts()
        return summaries
    }
}
