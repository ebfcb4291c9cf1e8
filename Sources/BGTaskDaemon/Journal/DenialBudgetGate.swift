import BGTaskConfig
import BGTaskCore
import BGTaskVarlink

/// The shell of the denial budget (``DenialBudget`` decides; issue 11, point 2 for denials): counts every
/// call answered with a journaled `deny` per calling process (the peer's uid and pid), and past the burst
/// holds the connection that was just refused (``VarlinkServer/hold(_:newConnectionsOfProcess:newConnectionsOfUID:)``: not read until
/// the interval ends; its reply, its streams and its assertions are untouched; a process that reconnects to
/// get round it has its new connections held too, and a uid whose processes do so, the uid's) and journals one entry per uid and interval saying so. It has no timer of its own: the interval's end is ``nextDeadline``, served by the daemon's one
/// monotonic timer, which calls ``deadlineReached()``. Runs on the daemon's queue.
final class DenialBudgetGate: @unchecked Sendable {
    // @unchecked: used only on `queue`.
    private var budget: DenialBudget
    private let sink: JournalSink
    private let now: @Sendable () -> Instant
    weak var server: VarlinkServer?
    /// Connections paused since start (Stats' `connectionsPaused`).
    var pauses: Int { budget.pauses }

    init(config: DaemonConfig, sink: JournalSink, now: @escaping @Sendable () -> Instant) {
        budget = DenialBudget(limits: Self.limits(config))
        self.sink = sink
        self.now = now
    }

    static func limits(_ config: DaemonConfig) -> DenialBudget.Limits {
        DenialBudget.Limits(
            perCallerBurst: config.journalDenialBurst, globalBurst: config.journalDenialGlobalBurst,
            interval: .microseconds(config.journalAssertionIntervalUSec), maxConnectionsPerUID: config.maxConnectionsPerUser)
    }

    /// A reload: the new limits count from the next interval on.
    func update(_ config: DaemonConfig) {
        budget.limits = Self.limits(config)
    }

    /// When the current interval ends, if a connection is held until then.
    var nextDeadline: Instant? { budget.nextDeadline }

    /// The daemon's timer fired for ``nextDeadline`` (early or late is harmless).
    func deadlineReached() {
        if budget.deadlineReached(now: now()) { server?.releaseHeld() }
    }

    /// `connection`'s call was answered with a journaled `deny`.
    func denied(_ connection: VarlinkConnection) {
        let t = now()
        let caller = DenialBudget.Caller(uid: connection.peer.uid, pid: connection.peer.pid)
        let (verdict, released) = budget.denied(caller, now: t)
        if released { server?.releaseHeld() }
        guard case .pause(let pause) = verdict else { return }
        server?.hold(
            connection, newConnectionsOfProcess: pause.holdNewConnections == .caller,
            newConnectionsOfUID: pause.holdNewConnections == .uid)
        if pause.firstOfUID { journal(pause, peer: connection.peer, now: t) }
    }

    private func journal(_ p: DenialBudget.Pause, peer: PeerCredentials, now t: Instant) {
        let limits = budget.limits
        let spent = TimeSpan.microseconds(t.microseconds - p.intervalStart.microseconds)
        let left = TimeSpan.microseconds(max(0, p.until.microseconds - t.microseconds))
        let interval = TimeSpan.microseconds(p.until.microseconds - p.intervalStart.microseconds)
        let which = p.global
            ? "all callers were refused \(p.totalDenials) calls (JournalDenialGlobalBurst=\(limits.globalBurst))"
            : "process \(peer.pid) of uid \(peer.uid) was refused \(p.callerDenials) calls (JournalDenialBurst=\(limits.perCallerBurst))"
        let message = "\(which) in \(spent) of a \(interval) interval: a connection of uid \(peer.uid) refused a call "
            + "past that burst is not read until the interval ends, in \(left) (every refusal is still journaled)"
        let fields = [
            JournalField(knownName: "BGTASKD_REASON", Reason.journalBudget.rawValue),
            JournalField(knownName: "BGTASKD_UID", String(peer.uid)),
            JournalField(knownName: "BGTASKD_PEER_PID", String(peer.pid)),
            JournalField(knownName: "BGTASKD_DENIED", String(p.global ? p.totalDenials : p.callerDenials)),
            JournalField(knownName: "BGTASKD_INTERVAL_USEC", String(interval.microseconds)),
            JournalField(knownName: "MESSAGE_ID", MessageIDs.connectionsPaused),
        ]
        sink.send(message, priority: .notice, fields: fields, essential: true)
    }
}
