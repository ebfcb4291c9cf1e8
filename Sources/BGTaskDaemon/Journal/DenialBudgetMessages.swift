import BGTaskConfig
import BGTaskCore
import BGTaskVarlink

/// The journal entry of the denial budget (``DenialBudget`` decides, inside ``DaemonCore``; issue 11,
/// point 2 for denials): a caller refused too often has its connection held until the interval ends
/// (``VarlinkServer/hold(_:newConnectionsOfProcess:newConnectionsOfUID:)``: not read; its reply, its streams
/// and its assertions are untouched), and one entry per uid and interval says so.
enum DenialBudgetMessages {
    static func journal(
        _ p: DenialBudget.Pause, caller: DenialBudget.Caller, limits: DenialBudget.Limits, now t: Instant, sink: JournalSink
    ) {
        let spent = TimeSpan.microseconds(t.microseconds - p.intervalStart.microseconds)
        let left = TimeSpan.microseconds(max(0, p.until.microseconds - t.microseconds))
        let interval = TimeSpan.microseconds(p.until.microseconds - p.intervalStart.microseconds)
        let which = p.global
            ? "all callers were refused \(p.totalDenials) calls (JournalDenialGlobalBurst=\(limits.globalBurst))"
            : "process \(caller.pid) of uid \(caller.uid) was refused \(p.callerDenials) calls (JournalDenialBurst=\(limits.perCallerBurst))"
        let message = "\(which) in \(spent) of a \(interval) interval: a connection of uid \(caller.uid) refused a call "
            + "past that burst is not read until the interval ends, in \(left) (every refusal is still journaled)"
        let fields = [
            JournalField(knownName: "BGTASKD_REASON", Reason.journalBudget.rawValue),
            JournalField(knownName: "BGTASKD_UID", String(caller.uid)),
            JournalField(knownName: "BGTASKD_PEER_PID", String(caller.pid)),
            JournalField(knownName: "BGTASKD_DENIED", String(p.global ? p.totalDenials : p.callerDenials)),
            JournalField(knownName: "BGTASKD_INTERVAL_USEC", String(interval.microseconds)),
            JournalField(knownName: "MESSAGE_ID", MessageIDs.connectionsPaused),
        ]
        sink.send(message, priority: .notice, fields: fields, essential: true)
    }
}
