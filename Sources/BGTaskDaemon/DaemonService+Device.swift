import BGTaskCore
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

// SPEC §14: the facts the core asks for about locks and a freeze that did not complete. The shell only
// reads /proc; the core decides.

/// Where `/proc/locks` is read, one read at a time, off the daemon's queue.
let procLocksQueue = DispatchQueue(label: "bgtaskd.proc-locks", qos: .utility)

extension DaemonService {
    /// The core asked for the app's locks: read off the queue and fed back (`locksObserved`); the core
    /// keeps the app in the background meanwhile. An app with no process holds no lock: answered at once.
    func observeLocks(_ app: AppID, _ processes: Processes) -> Input? {
        if processes.own, !(freezer is CgroupFreezer), let root = processes.pid {
            // A process tree: /proc/locks first, then only the pids it names (ProcLocks+Tree).
            let extra = processes.instances.isEmpty ? [] : adoption?.processes(app) ?? []
            guard lockReadsOffQueue else { return .locksObserved(app, ProcLocks.read(treeOf: root, plus: extra)) }
            let queue = self.queue
            procLocksQueue.async { @Sendable [weak self] in
                let seen = ProcLocks.read(treeOf: root, plus: extra)
                queue.async { @Sendable [weak self] in self?.feed(.locksObserved(app, seen)) }
            }
            return nil
        }
        let pids = appProcesses(app, processes)
        if pids.isEmpty { return .locksObserved(app, LockObservation()) }
        guard lockReadsOffQueue else { return .locksObserved(app, ProcLocks.read(pids: pids)) }
        let queue = self.queue
        procLocksQueue.async { @Sendable [weak self] in
            let seen = ProcLocks.read(pids: pids)
            queue.async { @Sendable [weak self] in self?.feed(.locksObserved(app, seen)) }
        }
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
