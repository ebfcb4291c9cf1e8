import BGTaskConfig
#if canImport(Glibc)
import Glibc
#endif

extension ProcessTable {
    /// `root` and its descendants, from the kernel's `/proc/PID/task/TID/children` lists: a walk over the
    /// app's own processes, where ``read()`` reads every process on the machine (with 10,000 apps running,
    /// reading the whole table at every energy reading made each launch cost O(apps)). `nil` when the
    /// kernel does not provide those lists (no `CONFIG_PROC_CHILDREN`) or `root` is gone: then read the
    /// table. Unlike ``tree(roots:)`` it does not find members of `root`'s session that were re-parented
    /// away from it (a daemonized grandchild); the energy meter of an app without a cgroup accepts that.
    static func descendants(of root: Int32) -> [Int32]? {
        var result: [Int32] = []
        var seen: Set<Int32> = []
        var stack = [root]
        while let pid = stack.popLast() {
            guard seen.insert(pid).inserted else { continue }
            guard let tasks = opendir("/proc/\(pid)/task") else {
                if pid == root { return nil }
                continue  // exited meanwhile
            }
            result.append(pid)
            var sawChildrenFile = false
            while let entry = readdir(tasks) {
                let name = FileIO.name(of: entry)
                guard Int32(name) != nil, let text = readFile("/proc/\(pid)/task/\(name)/children") else { continue }
                sawChildrenFile = true
                for field in text.split(whereSeparator: { $0 == " " || $0 == "\n" }) {
                    if let child = Int32(field) { stack.append(child) }
                }
            }
            closedir(tasks)
            if pid == root, !sawChildrenFile { return nil }
        }
        return result.sorted()
    }
}
