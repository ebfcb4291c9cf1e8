import BGTaskConfig
import BGTaskCore

/// The shell of SPEC §11's journal budget (``JournalBudget`` decides): asks the budget about each decision's
/// entry and journals the `coalesced` summaries. It has no timer of its own: the end of an interval that has
/// something to report is ``nextDeadline``, served by the daemon's one monotonic timer, which calls
/// ``deadlineReached()``. Runs on the daemon's queue.
final class JournalBudgetGate: @unchecked Sendable {
    // @unchecked: used only on `queue`.
    private var budget: JournalBudget
    private let sink: JournalSink
    private let now: @Sendable () -> Instant
    /// Decisions counted in summaries rather than journaled one by one (for tests and figures).
    private(set) var coalesced = 0
    /// `coalesced` summaries journaled (for tests and figures).
    private(set) var summaries = 0

    init(config: DaemonConfig, sink: JournalSink, now: @escaping @Sendable () -> Instant) {
        budget = JournalBudget(limits: Self.limits(config))
        self.sink = sink
        self.now = now
    }

    /// When the current interval ends, if it has summaries to journal then.
    var nextDeadline: Instant? { budget.nextDeadline }

    /// The daemon's timer fired for ``nextDeadline`` (early or late is harmless).
    func deadlineReached() {
        journal(budget.deadlineReached(now: now()))
    }

    static func limits(_ config: DaemonConfig) -> JournalBudget.Limits {
        JournalBudget.Limits(
            perAppBurst: config.journalAssertionBurst, globalBurst: config.journalAssertionGlobalBurst,
            interval: .microseconds(config.journalAssertionIntervalUSec))
    }

    /// A reload: the new limits count from the next interval on.
    func update(_ config: DaemonConfig) {
        budget.limits = Self.limits(config)
    }

    /// Whether the entry of a decision of `kind` for `app` is journaled on its own (false: it is counted).
    func admit(_ kind: DecisionKind, app: AppID?) -> Bool {
        guard JournalBudget.isBudgeted(kind) else { return true }
        let (verdict, summaries) = budget.admit(kind, app: app, now: now())
        journal(summaries)
        if verdict == .coalesce { coalesced += 1 }
        return verdict == .journal
    }

    /// Shutdown: the current interval's counts are journaled now rather than lost.
    func close() {
        journal(budget.closeWindow(now: now()))
    }

    private func journal(_ summaries: [JournalBudget.Summary]) {
        self.summaries += summaries.count
        for s in summaries {
            let span = TimeSpan.microseconds(s.intervalEnd.microseconds - s.intervalStart.microseconds)
            let who = s.app.map { "\($0)" } ?? "\(s.apps) more apps"
            let message = "\(who): \(s.granted) grants and \(s.ended) ends in the last \(span) not journaled one by one "
                + "(journal budget: JournalAssertionBurst=\(budget.limits.perAppBurst), "
                + "JournalAssertionGlobalBurst=\(budget.limits.globalBurst))"
            var fields = [
                JournalField(knownName: "BGTASKD_DECISION", DecisionKind.coalesced.rawValue),
                JournalField(knownName: "BGTASKD_REASON", Reason.journalBudget.rawValue),
                JournalField(knownName: "BGTASKD_GRANTED", String(s.granted)),
                JournalField(knownName: "BGTASKD_ENDED", String(s.ended)),
                JournalField(knownName: "BGTASKD_INTERVAL_USEC", String(span.microseconds)),
            ]
            if let id = MessageIDs.byDecision[DecisionKind.coalesced.rawValue] {
                fields.append(JournalField(knownName: "MESSAGE_ID", id))
            }
            if let app = s.app {
                fields.append(JournalField(knownName: "BGTASKD_APP", app.rawValue))
            } else {
                fields.append(JournalField(knownName: "BGTASKD_APPS", String(s.apps)))
            }
            sink.send(message, priority: .info, fields: fields, essential: true)
        }
    }
}
