import BGTaskCore
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

// SPEC §14: the facts the core asks for about locks and a freeze that did not complete. The shell only
// reads /proc; the core decides.

/// Where `/proc/locks` is read, one read at a time, off the daemon's queue. At the daemon's own priority: a
/// suspension waits for the read (libdispatch on Linux runs a `.utility` queue's threads at nice 2, which
/// a busy machine schedules late).
let procLocksQueue = DispatchQueue(label: "bgtaskd.proc-locks")

/// The lock checks waiting for a read of `/proc/locks`: one read serves every check waiting when it begins.
/// Reading `/proc/locks` takes the kernel's `file_rwsem` for writing, which can wait for an RCU grace
/// period (milliseconds with the CPUs busy); apps backgrounded together (a burst, the screen turned off)
/// would otherwise each wait for the reads of all those before them.
final class LockReads: Sendable {
    /// What one check asks about: the app's process tree (and more pids), or its processes.
    enum Subject: Sendable {
        case tree(root: Int32, extra: [Int32])
        case pids([Int32])
    }

    private let waiting = Mutex<[(app: AppID, subject: Subject)]>([])
    private let queue: DispatchQueue
    private let observed: @Sendable ([(AppID, LockObservation)]) -> Void

    /// Checks read on `procLocksQueue`; `observed` gets each read's observations, in the order they were
    /// asked for, on `queue`.
    init(queue: DispatchQueue, observed: @escaping @Sendable ([(AppID, LockObservation)]) -> Void) {
        self.queue = queue
        self.observed = observed
    }

    /// Asks for `app`'s locks at the next read (now, if none is under way).
    func ask(_ app: AppID, _ subject: Subject) {
        let first = waiting.withLock { w in
            w.append((app, subject))
            return w.count == 1
        }
        guard first else { return }
        procLocksQueue.async { @Sendable in self.readOnce() }
    }

    private func readOnce() {
        let checks = waiting.withLock { w in
            defer { w.removeAll() }
            return w
        }
        guard !checks.isEmpty else { return }
        let entries = readFile("/proc/locks").map(ProcLocks.parse) ?? []
        let seen = checks.map { check in
            switch check.subject {
            case .tree(let root, let extra): return (check.app, ProcLocks.observe(entries, treeOf: root, plus: extra))
            case .pids(let pids):
                return (check.app, ProcLocks.observe(entries, pids: Set(pids), ofdFiles: { ProcLocks.ofdLocks(of: pids) }))
            }
        }
        let observed = self.observed
        queue.async { @Sendable in observed(seen) }
    }
}

extension DaemonService {
    /// The core asked for the app's locks: read off the queue and fed back (`locksObserved`; one read for
    /// every app waiting, ``LockReads``); the core keeps the app in the background meanwhile. An app with
    /// no process holds no lock: answered at once.
    func observeLocks(_ app: AppID, _ processes: Processes) -> Input? {
        if processes.own, !(freezer is CgroupFreezer), let root = processes.pid {
            // A process tree: /proc/locks first, then only the pids it names (ProcLocks+Tree).
            let extra = processes.instances.isEmpty ? [] : adoption?.processes(app) ?? []
            guard lockReadsOffQueue else { return .locksObserved(app, ProcLocks.read(treeOf: root, plus: extra)) }
            lockReads.ask(app, .tree(root: root, extra: extra))
            return nil
        }
        let pids = appProcesses(app, processes)
        if pids.isEmpty { return .locksObserved(app, LockObservation()) }
        guard lockReadsOffQueue else { return .locksObserved(app, ProcLocks.read(pids: pids)) }
        lockReads.ask(app, .pids(pids))
        return nil
    }

    /// Every process of the app: the daemon's own part (its cgroup or process tree) and its adopted instances.
    func appProcesses(_ app: AppID, _ processes: Processes) -> [Int32] {
        var pids: [Int32] = []
        if processes.own {
            if let cgroup = freezer as? CgroupFreezer {
                pids = cgroup.processes(app: app, pid: processes.pid)
            } else if let pid = processes.pid {
                pids = SignalFreezer.processTree(root: pid)
            }
        }
        if !processes.instances.isEmpty, let adoption { pids += adoption.processes(app) }
        return pids
    }

    /// The processes of the app that did not stop (neither frozen nor stopped nor gone), with their wchan.
    /// None: the freeze is done after all.
    func inspectFreeze(_ app: AppID, _ processes: Processes) -> Input {
        let stalled = appProcesses(app, processes).compactMap(Self.stalledProcess)
        if stalled.isEmpty { return .freezeConfirmed(app) }
        return .freezeStalled(app, stalled)
    }

    /// A process that is not stopped: not `T`/`t` (SIGSTOP), not gone (`Z`, `X`, no /proc entry), and not
    /// parked by the cgroup v2 freezer (which sleeps in `get_signal`/`do_freezer_trap`).
    static func stalledProcess(_ pid: Int32) -> StalledProcess? {
        guard let stat = readFile("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")"),
              let open = stat.firstIndex(of: "(")
        else { return nil }
        let rest = stat[stat.index(after: close)...].drop(while: { $0 == " " })
        guard let state = rest.first, !"TtZX".contains(state) else { return nil }
        let wchan = readFile("/proc/\(pid)/wchan") ?? ""
        if ["get_signal", "do_freezer_trap", "do_signal_stop"].contains(wchan) { return nil }
        let name = String(stat[stat.index(after: open)..<close])
        return StalledProcess(pid: pid, name: name, wchan: wchan == "0" ? "" : wchan)
    }

    /// SPEC §14: someone else thawed an app the daemon holds frozen.
    func thawedExternally(_ app: AppID) {
        feedFact(.thawedExternally(app))
    }

    /// After system sleep (SPEC §14): every app held frozen is checked, those thawed meanwhile frozen again.
    func recheckFrozenApps() {
        (freezer as? CgroupFreezer)?.recheckHeld()
        adoption?.recheckHeld()
    }
}
