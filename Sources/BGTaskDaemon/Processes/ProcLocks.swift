import BGTaskCore

#if canImport(Glibc)
import Glibc
#endif

/// One line of `/proc/locks`: a lock held, or (`waiter`) a request blocked on the lock of the same `id`.
///
/// The kernel writes `ID: [-> ]KIND MODE ACCESS PID MAJ:MIN:INODE START END`, e.g.
/// `1: POSIX  ADVISORY  WRITE 1234 fe:00:16228619 0 EOF` and below it `1: -> POSIX  ADVISORY  WRITE 1235 …`
/// for a process waiting for it. OFD locks (`OFDLCK`) show pid -1: their owner is an open file description,
/// found through `/proc/PID/fdinfo/FD` (`lock:` lines). A lease breaker's line names no file (`<none>:0`).
public struct ProcLockEntry: Equatable, Sendable {
    var id: Int
    var waiter: Bool
    var kind: String
    /// -1 for OFD locks (and OFD waiters).
    var pid: Int32
    /// `MAJ:MIN` as written (hexadecimal), `nil` for `<none>`.
    var device: String?
    var inode: UInt64

    /// `dev:inode`, the key that matches an fdinfo `lock:` line to a `/proc/locks` one.
    var file: String? { device.map { "\($0):\(inode)" } }
}

/// `/proc/locks`, parsed and matched to an app's processes (SPEC §14). Pure: the reader (`read`) is the
/// only part that touches /proc.
public enum ProcLocks: Sendable {
    /// Every well-formed line; anything else is skipped.
    public static func parse(_ text: String) -> [ProcLockEntry] {
        var out: [ProcLockEntry] = []
        for line in text.split(separator: "\n") {
            if let entry = parseLine(line) { out.append(entry) }
        }
        return out
    }

    static func parseLine(_ line: Substring) -> ProcLockEntry? {
        var fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })[...]
        guard let first = fields.popFirst(), first.last == ":", let id = Int(first.dropLast()) else { return nil }
        var waiter = false
        if fields.first == "->" {
            waiter = true
            fields = fields.dropFirst()
        }
        // KIND MODE ACCESS PID FILE …
        guard fields.count >= 5 else { return nil }
        let kind = String(fields[fields.startIndex])
        guard let pid = Int32(fields[fields.startIndex + 3]) else { return nil }
        let file = fields[fields.startIndex + 4]
        let parts = file.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count >= 2 else { return nil }
        if parts[0] == "<none>" {
            return ProcLockEntry(id: id, waiter: waiter, kind: kind, pid: pid, device: nil, inode: 0)
        }
        guard parts.count == 3, let inode = UInt64(parts[2]) else { return nil }
        return ProcLockEntry(
            id: id, waiter: waiter, kind: kind, pid: pid, device: "\(parts[0]):\(parts[1])", inode: inode)
    }

    /// What the processes `pids` hold and who outside them waits. `ofdFiles` gives the `dev:inode` of the
    /// OFD locks those processes hold (from their fdinfo); it is called only when an OFD lock is listed.
    /// A waiter with pid -1 (an OFD request) is taken as outside the app: its owner cannot be named.
    static func observe(
        _ entries: [ProcLockEntry], pids: Set<Int32>, ofdFiles: () -> [String: Int32]
    ) -> LockObservation {
        var ofd: [String: Int32]?
        var held = 0
        var contended: [LockContention] = []
        var holderOfID: [Int: (entry: ProcLockEntry, holder: Int32?)] = [:]
        for entry in entries {
            if !entry.waiter {
                var mine = pids.contains(entry.pid)
                var holder: Int32? = entry.pid
                if entry.pid == -1 {
                    if ofd == nil { ofd = ofdFiles() }
                    holder = entry.file.flatMap { ofd?[$0] }
                    mine = holder != nil
                }
                if mine {
                    held += 1
                    holderOfID[entry.id] = (entry, holder)
                } else {
                    holderOfID[entry.id] = nil
                }
                continue
            }
            guard let (lock, holder) = holderOfID[entry.id], !pids.contains(entry.pid) else { continue }
            contended.append(LockContention(
                kind: lock.kind, device: lock.device ?? "<none>", inode: lock.inode, holder: holder,
                waiter: entry.pid == -1 ? nil : entry.pid))
        }
        return LockObservation(held: held, contended: contended)
    }

    /// The `dev:inode` of every OFD lock in the fdinfo of `pids` (each file's `lock:` lines), with its pid.
    static func ofdLocks(of pids: [Int32]) -> [String: Int32] {
        var out: [String: Int32] = [:]
        for pid in pids {
            for fd in names(in: "/proc/\(pid)/fdinfo") {
                guard let text = readFile("/proc/\(pid)/fdinfo/\(fd)"), text.contains("OFDLCK") else { continue }
                for line in text.split(separator: "\n") where line.hasPrefix("lock:") {
                    if let entry = parseLine(line.dropFirst("lock:".count)), entry.kind == "OFDLCK", !entry.waiter,
                       let file = entry.file
                    {
                        out[file] = pid
                    }
                }
            }
        }
        return out
    }

    /// `make bench`: what ``read(pids:)`` finds, as counts (held, contended).
    public static func scanCounts(pids: [Int32]) -> (held: Int, contended: Int) {
        let seen = read(pids: pids)
        return (seen.held, seen.contended.count)
    }

    /// Reads `/proc/locks` and matches it to `pids`.
    static func read(pids: [Int32]) -> LockObservation {
        guard !pids.isEmpty, let text = readFile("/proc/locks") else { return LockObservation() }
        return observe(parse(text), pids: Set(pids), ofdFiles: { ofdLocks(of: pids) })
    }

    /// The names in a directory (none on error).
    static func names(in dir: String) -> [String] {
        guard let d = opendir(dir) else { return [] }
        defer { closedir(d) }
        var names: [String] = []
        while let entry = readdir(d) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
