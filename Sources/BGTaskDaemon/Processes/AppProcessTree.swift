import BGTaskConfig
import BGTaskCore

#if canImport(Glibc)
import Glibc
#endif

/// A snapshot of /proc: the parent, session and start time of every process.
struct ProcessTable {
    struct Entry {
        var parent: Int32
        var session: Int32
        /// Field 22 of /proc/PID/stat: with the pid, it names one process across pid reuse.
        var startTime: UInt64
    }

    private(set) var entries: [Int32: Entry] = [:]

    init(entries: [Int32: Entry] = [:]) { self.entries = entries }

    static func read() -> ProcessTable {
        var table = ProcessTable()
        guard let dir = opendir("/proc") else { return table }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = FileIO.name(of: entry)
            guard let pid = Int32(name), let e = Self.entry(of: pid) else { continue }
            table.entries[pid] = e
        }
        return table
    }

    /// The line of one process, from /proc/PID/stat; nil if it is gone.
    static func entry(of pid: Int32) -> Entry? {
        guard let stat = FileIO.readBytes("/proc/\(pid)/stat"), let close = stat.lastIndex(of: UInt8(ascii: ")"))
        else { return nil }
        // The fields after the command name (which may hold spaces and parentheses): state ppid pgrp
        // session …; the start time is field 22, the 20th of these. Read as bytes: no field is copied.
        var numbers: (ppid: UInt64?, session: UInt64?, start: UInt64?) = (nil, nil, nil)
        var field = -1
        var i = close + 1
        while i < stat.count, field < 19 {
            while i < stat.count, stat[i] == UInt8(ascii: " ") || stat[i] == UInt8(ascii: "\n") { i += 1 }
            guard i < stat.count else { break }
            field += 1
            var n: UInt64 = 0
            var digits = true
            while i < stat.count, stat[i] != UInt8(ascii: " "), stat[i] != UInt8(ascii: "\n") {
                let d = stat[i] &- UInt8(ascii: "0")
                if d < 10, n < UInt64.max / 10 - 10 { n = n * 10 + UInt64(d) } else { digits = false }
                i += 1
            }
            guard digits else { continue }
            switch field {
            case 1: numbers.ppid = n
            case 3: numbers.session = n
            case 19: numbers.start = n
            default: break
            }
        }
        guard let ppid = numbers.ppid, ppid <= UInt64(Int32.max), let sid = numbers.session, sid <= UInt64(Int32.max),
              let start = numbers.start
        else { return nil }
        return Entry(parent: Int32(ppid), session: Int32(sid), startTime: start)
    }

    /// `roots`, every process in a session one of them leads, and every descendant of those.
    func tree(roots: Set<Int32>) -> Set<Int32> {
        var children: [Int32: [Int32]] = [:]
        var result = roots
        for (pid, e) in entries {
            children[e.parent, default: []].append(pid)
            if roots.contains(e.session) { result.insert(pid) }
        }
        var stack = Array(result)
        while let p = stack.popLast() {
            for c in children[p] ?? [] where result.insert(c).inserted { stack.append(c) }
        }
        return result
    }
}

/// Which processes are an app's, for the signal freezer: its main process, its session and their
/// descendants — and the descendants that were orphaned on the way (a `(setsid cmd &)` daemonizes: the
/// subshell exits, the grandchild leads a session of its own). The daemon is a child subreaper
/// (`PR_SET_CHILD_SUBREAPER`, set by ``Launcher/start()``), so such an orphan becomes a child of the
/// daemon rather than of init. A child of the daemon is taken as the app's when it was seen in the app's
/// tree before (pid and start time), or when its environment says `BGTASKD_APP_ID=<app>` (the daemon
/// puts it in the environment of every app it launches, and children inherit it).
///
/// What it cannot see: a descendant that clears its environment and daemonizes before any scan saw it
/// (or that escapes into another subreaper); the cgroup freezer has no such gap.
struct AppProcessTracker {
    /// Every process last seen as the app's, pid → start time.
    private var seen: [AppID: [Int32: UInt64]] = [:]
    /// `BGTASKD_APP_ID` of the daemon's children, read once per process (pid → start time, app).
    private var environs: [Int32: (start: UInt64, app: String?)] = [:]
    let daemonPID: Int32
    /// `BGTASKD_APP_ID` in a process's environment (tests pass their own).
    let environmentAppID: (Int32) -> String?

    init(daemonPID: Int32 = getpid(), environmentAppID: @escaping (Int32) -> String? = AppProcessTracker.environmentAppID) {
        self.daemonPID = daemonPID
        self.environmentAppID = environmentAppID
    }

    /// The app's processes now (`root`: its main process, if it has one); remembers them.
    mutating func members(of app: AppID, root: Int32?, table: ProcessTable) -> [Int32] {
        var roots: Set<Int32> = []
        if let root { roots.insert(root) }
        for (pid, start) in seen[app] ?? [:] where table.entries[pid]?.startTime == start { roots.insert(pid) }
        var daemonChildren: Set<Int32> = []
        for (pid, e) in table.entries where e.parent == daemonPID {
            daemonChildren.insert(pid)
            if !roots.contains(pid), appID(of: pid, start: e.startTime) == app.rawValue { roots.insert(pid) }
        }
        environs = environs.filter { daemonChildren.contains($0.key) }
        let members = table.tree(roots: roots)
        var now: [Int32: UInt64] = [:]
        for pid in members { if let e = table.entries[pid] { now[pid] = e.startTime } }
        seen[app] = now
        return members.sorted()
    }

    /// The app has no process left that the daemon manages.
    mutating func forget(_ app: AppID) { seen[app] = nil }

    private mutating func appID(of pid: Int32, start: UInt64) -> String? {
        if let known = environs[pid], known.start == start { return known.app }
        let app = environmentAppID(pid)
        environs[pid] = (start, app)
        return app
    }

    /// `BGTASKD_APP_ID` in /proc/PID/environ (the environment the process started with).
    static func environmentAppID(_ pid: Int32) -> String? {
        guard let bytes = FileIO.readBytes("/proc/\(pid)/environ") else { return nil }
        let key = Array("BGTASKD_APP_ID=".utf8)
        for variable in bytes.split(separator: 0, omittingEmptySubsequences: true) where variable.starts(with: key) {
            return String(decoding: variable.dropFirst(key.count), as: UTF8.self)
        }
        return nil
    }
}
