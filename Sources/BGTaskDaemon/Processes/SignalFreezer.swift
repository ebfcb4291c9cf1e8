import BGTaskConfig
import BGTaskCore
import BGTaskLaunch
import CSystemd
import Dispatch
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// `FreezerBackend=signal`: SIGSTOP/SIGCONT to every process of the app: its session (an app started
/// by the daemon leads its own session, so children started later are in it), the descendants of
/// its main process, and its descendants that daemonized themselves and were re-parented to the daemon
/// (a child subreaper; ``AppProcessTracker``). An app that exits leaves nothing running: whatever is left
/// of it is killed when it is released, as the cgroup freezer kills what is left in the app's cgroup.
///
/// A freeze is done only when every process signalled is stopped (`T`/`t` in /proc/PID/stat) or gone:
/// kill(2) only makes SIGSTOP pending, and each process (each thread) stops when it is next scheduled —
/// tens of milliseconds for busy processes on a loaded machine. It is looked at once right after the
/// signals; if not done yet, the core says when to look again (``checkFreeze(app:pid:late:)``; the core's
/// deadlines, DaemonCore+Freezes.swift), since the kernel gives no event for "a process that is not my
/// child stopped" (waitid/SIGCHLD report stops of children only, a pidfd only the exit). A look the core
/// says is late logs a warning naming the processes that still run. SIGCONT needs no such wait: the kernel
/// wakes every stopped thread in kill(2) itself, so no process is stopped any more when it returns.
final class SignalFreezer: Freezer {
    var name: String { "signal" }
    var onFrozen: ((AppID) -> Void)?
    private var frozen: [AppID: Int32] = [:]
    /// Whose processes are whose (daemonized descendants included).
    private var tracker = AppProcessTracker()
    /// issue 5: records of the processes stopped, so that a daemon restarted after a crash finds them
    /// (SignalRecovery.swift); nil: not recorded.
    let records: StoppedProcessRecords?
    let queue: DispatchQueue
    let logger: Logger

    /// Freezes whose processes were not all stopped yet when last looked at: the facts a look needs (which
    /// processes were signalled, since when, whether a warning was logged). When to look is the core's.
    private var pending: [AppID: PendingStop] = [:]
    private struct PendingStop {
        /// Every process SIGSTOP was sent to.
        var pids: [Int32]
        var startUSec: Int64
        /// The "still running" warning was logged.
        var warned = false
    }

    /// Freezes confirmed, and the latency of the last one (µs).
    private(set) var confirmedFreezes = 0
    private(set) var lastFreezeLatencyUSec: Int64?

    init(queue: DispatchQueue, logger: Logger, records: StoppedProcessRecords? = nil) {
        self.queue = queue
        self.logger = logger
        self.records = records
    }

    func prepareLaunch(app: AppID) -> Int32? { nil }
    func attach(app: AppID, pid: Int32) {}

    func freeze(app: AppID, pid: Int32?) -> FreezeFact {
        guard let pid else { return .frozen }
        pending[app] = nil
        let start = Monotonic.nowUSec()
        // issue 5: recorded before stopping (a crash in between must not leave an unrecorded stop),
        // and again if children turned up meanwhile.
        let known = records == nil ? [] : members(app, pid)
        records?.stopped(app: app, pids: known)
        let stopped = signalApp(app, pid, SIGSTOP)
        frozen[app] = pid
        if stopped != known { records?.stopped(app: app, pids: stopped) }
        if Self.notStopped(stopped).isEmpty {
            confirmed(app, startUSec: start, late: false)
            return .frozen
        }
        pending[app] = PendingStop(pids: stopped, startUSec: start)
        return .notYet
    }

    func checkFreeze(app: AppID, pid: Int32?, late: Bool) -> FreezeFact {
        guard let stop = pending[app] else { return .frozen }
        let running = Self.notStopped(stop.pids)
        if running.isEmpty {
            pending[app] = nil
            confirmed(app, startUSec: stop.startUSec, late: stop.warned)
            return .frozen
        }
        if late, !stop.warned {
            pending[app]?.warned = true
            let list = running.map { "\($0.pid) (\($0.state))" }.joined(separator: " ")
            logger.warning(
                "\(app) is not stopped \(DaemonCore.lateFreeze.microseconds / 1000) ms after SIGSTOP (processes still running: \(list))",
                metadata: ["BGTASKD_APP": "\(app)"])
        }
        return .notYet
    }

    func freezeWithSignals(app: AppID, pid: Int32?) -> FreezeFact { freeze(app: app, pid: pid) }

    func thaw(app: AppID, pid: Int32?) {
        pending[app] = nil
        guard let pid = pid ?? frozen[app] else { return }
        // Done when kill(2) returns: SIGCONT wakes every stopped thread in the sender's call (and discards a
        // SIGSTOP not yet acted on).
        signalApp(app, pid, SIGCONT)
        frozen[app] = nil
        records?.cleared(app: app)  // issue 5
    }

    func signal(app: AppID, pid: Int32?, _ sig: Int32) {
        guard let pid else { return }
        signalApp(app, pid, sig)
    }

    func kill(app: AppID, pid: Int32?) {
        pending[app] = nil
        signalApp(app, pid, SIGKILL)
        frozen[app] = nil
        records?.cleared(app: app)  // issue 5
    }

    /// The app's main process is gone: what it left running (a child it did not wait for, a daemonized
    /// descendant) is killed, then the app is forgotten.
    func released(app: AppID) {
        let left = signalApp(app, nil, SIGKILL)
        if !left.isEmpty {
            logger.info(
                "\(app) exited leaving \(left.count) process(es): killing them (\(left.map(String.init).joined(separator: " ")))",
                metadata: ["BGTASKD_APP": "\(app)"])
        }
        forget(app: app)
    }

    /// Forgets the app without looking for what it left (the cgroup freezer kills that itself).
    func forget(app: AppID) {
        pending[app] = nil
        frozen[app] = nil
        tracker.forget(app)
        records?.cleared(app: app)  // issue 5
    }

    func thawAll() {
        pending.removeAll()
        for (app, pid) in frozen {
            signalApp(app, pid, SIGCONT)
            records?.cleared(app: app)  // issue 5
        }
        frozen.removeAll()
    }

    // MARK: - Confirmation

    /// The processes of `pids` that run (pid, state letter): neither stopped (`T`, `t`) nor gone (`Z`,
    /// `X`, no /proc entry).
    static func notStopped(_ pids: [Int32]) -> [(pid: Int32, state: Character)] {
        var out: [(pid: Int32, state: Character)] = []
        for pid in pids {
            guard let stat = readFile("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { continue }
            // "pid (comm) S …": the state is the first character after ") ".
            let rest = stat[stat.index(after: close)...].drop(while: { $0 == " " })
            guard let state = rest.first else { continue }
            if !"TtZX".contains(state) { out.append((pid, state)) }
        }
        return out
    }

    private func confirmed(_ app: AppID, startUSec: Int64, late: Bool) {
        let latency = Monotonic.nowUSec() - startUSec
        confirmedFreezes += 1
        lastFreezeLatencyUSec = latency
        let metadata: Logger.Metadata = ["BGTASKD_APP": "\(app)", "BGTASKD_FREEZE_LATENCY_USEC": "\(latency)"]
        if late {
            logger.notice("froze \(app): every process stopped (SIGSTOP), late, after \(latency) µs", metadata: metadata)
        } else {
            logger.info("froze \(app): every process stopped (SIGSTOP) after \(latency) µs", metadata: metadata)
        }
    }

    /// The app's processes (`root`: its main process, if any), daemonized descendants included.
    private func members(_ app: AppID, _ root: Int32?) -> [Int32] {
        tracker.members(of: app, root: root, table: .read())
    }

    /// Signals every process of the app as ``signalTree(root:_:)`` does, daemonized descendants included;
    /// returns the pids signalled.
    @discardableResult
    private func signalApp(_ app: AppID, _ root: Int32?, _ sig: Int32) -> [Int32] {
        var signalled: Set<Int32> = []
        for _ in 0..<8 {
            let fresh = members(app, root).filter { !signalled.contains($0) }
            if fresh.isEmpty { break }
            for pid in fresh { _ = Glibc.kill(pid, sig) }
            signalled.formUnion(fresh)
            if sig != SIGSTOP && sig != SIGKILL { break }
        }
        return signalled.sorted()
    }

    /// Signals `root`, every process in the session `root` leads, and every descendant of `root`;
    /// returns the pids signalled.
    @discardableResult
    static func signalTree(root: Int32, _ sig: Int32) -> [Int32] {
        // issue 5: a process that was not stopped yet may have forked between the scan of /proc and
        // its signal. Once kill(2) has returned the target can no longer complete a fork (a pending
        // signal restarts it), so rescanning until nothing new turns up catches every child.
        var signalled: Set<Int32> = []
        for _ in 0..<8 {
            let fresh = processTree(root: root).filter { !signalled.contains($0) }
            if fresh.isEmpty { break }
            for pid in fresh { _ = Glibc.kill(pid, sig) }
            signalled.formUnion(fresh)
            if sig != SIGSTOP && sig != SIGKILL { break }
        }
        return signalled.sorted()
    }

    /// `root` and the processes that belong to it (its session, its descendants), from /proc.
    static func processTree(root: Int32) -> [Int32] {
        ProcessTable.read().tree(roots: [root]).sorted()
    }
}
