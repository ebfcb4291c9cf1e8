import BGTaskCore

/// The lock check before a freeze (SPEC §14) for an app whose processes are a process tree (the signal
/// freezer's, and a dry run's): `/proc/locks` is read first, and only the pids it names are tested for
/// membership, each by walking up its parents — where reading the app's tree first read the stat of every
/// process on the machine at every suspension (`make bench` row 3: 2,000 suspensions on a machine of
/// 2,400 processes were a quarter of the daemon's CPU). Lock-free apps pay one read of `/proc/locks`.
extension ProcLocks {
    /// What the tree of `root` (``ProcessTable/tree(roots:)``) and the processes `extra` hold, and who
    /// outside them waits: the same observation as ``read(pids:)`` of those processes. An OFD lock (pid -1)
    /// is matched through the app's file descriptors, so then the whole tree is read.
    static func read(treeOf root: Int32, plus extra: [Int32]) -> LockObservation {
        guard let text = readFile("/proc/locks") else { return LockObservation() }
        return observe(parse(text), treeOf: root, plus: extra)
    }

    /// ``read(treeOf:plus:)`` from `entries` already read.
    static func observe(_ entries: [ProcLockEntry], treeOf root: Int32, plus extra: [Int32]) -> LockObservation {
        if entries.isEmpty { return LockObservation() }
        if entries.contains(where: { $0.pid == -1 }) {
            let pids = SignalFreezer.processTree(root: root) + extra
            return observe(entries, pids: Set(pids), ofdFiles: { ofdLocks(of: pids) })
        }
        // `observe` asks only whether the pids of `entries` are the app's.
        var members = Set(extra)
        let rootStart = ProcessTable.entry(of: root)?.startTime
        for pid in Set(entries.map(\.pid)) where !members.contains(pid) && ProcessTable.inTree(pid, root: root, rootStart: rootStart) {
            members.insert(pid)
        }
        return observe(entries, pids: members, ofdFiles: { [:] })
    }
}

extension ProcessTable {
    /// Whether `pid` is in `tree(roots: [root])` of the table as it is now: `root` itself, a process of
    /// the session `root` leads, or a descendant of one of those; found from `pid`'s own line of /proc
    /// and its parents' instead of the whole table. `rootStart`, `root`'s start time, ends the walk at the
    /// first process older than `root` (a system daemon holding a lock: one read, not its chain to init):
    /// none of the tree started before its root (the one exception, a process left in the session of an
    /// earlier holder of `root`'s pid, is not the app's).
    static func inTree(_ pid: Int32, root: Int32, rootStart: UInt64? = nil) -> Bool {
        var p = pid
        var steps = 0
        while p > 0, steps < 1 << 16 {
            if p == root { return true }
            guard let e = entry(of: p) else { return false }
            if let rootStart, e.startTime < rootStart { return false }
            if e.session == root { return true }
            p = e.parent
            steps += 1
        }
        return false
    }
}
