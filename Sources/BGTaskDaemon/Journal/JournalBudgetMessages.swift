import BGTaskConfig
import BGTaskCore

/// The journal entries of SPEC §11's journal budget (``JournalBudget`` decides, inside ``DaemonCore``):
/// the `coalesced` summaries of an interval's grants and ends not journaled one by one.
enum JournalBudgetMessages {
    static func journal(_ summaries: [JournalBudget.Summary], limits: JournalBudget.Limits, sink: JournalSink) {
        for s in summaries {
            let span = TimeSpan.microseconds(s.intervalEnd.microseconds - s.intervalStart.microseconds)
            let who = s.app.map { "\($0)" } ?? "\(s.apps) more apps"
            let message = "\(who): \(s.granted) grants and \(s.ended) ends in the last \(span) not journaled one by one "
                + "(journal budget: JournalAssertionBurst=\(limits.perAppBurst), "
                + "JournalAssertionGlobalBurst=\(limits.globalBurst))"
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
