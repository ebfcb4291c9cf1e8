import BGTaskModel
import BGTaskConfig
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
    /// Every well-formed line; anything else is skipped. Works on the UTF-8 bytes (a thousand locks are
    /// a thousand lines: `make bench` row 7).
    public static func parse(_ text: String) -> [ProcLockEntry] {
        var out: [ProcLockEntry] = []
        var text = text
        text.withUTF8 { bytes in
            var start = 0
            while start < bytes.count {
                var end = start
                while end < bytes.count, bytes[end] != 10 { end += 1 }
                if let entry = parseLine(UnsafeBufferPointer(rebasing: bytes[start..<end])) { out.append(entry) }
                start = end + 1
            }
        }
        return out
    }

    static func parseLine(_ line: Substring) -> ProcLockEntry? {
        var copy = String(line)
        return copy.withUTF8 { parseLine($0) }
    }

    /// `ID: [-> ]KIND MODE ACCESS PID FILE …`, as bytes.
    static func parseLine(_ line: UnsafeBufferPointer<UInt8>) -> ProcLockEntry? {
        // The first six blank-separated fields (seven with `->`), as ranges.
        var fields: [Range<Int>] = []
        fields.reserveCapacity(7)
        var i = 0
        while i < line.count, fields.count < 7 {
            while i < line.count, line[i] == 32 || line[i] == 9 { i += 1 }
            let start = i
            while i < line.count, line[i] != 32, line[i] != 9 { i += 1 }
            if i > start { fields.append(start..<i) }
        }
        guard fields.count >= 6 else { return nil }
        let first = fields[0]
        guard first.count >= 2, line[first.upperBound - 1] == UInt8(ascii: ":"),
              let id = decimal(line, first.lowerBound..<first.upperBound - 1)
        else { return nil }
        var k = 1
        var waiter = false
        if fields[1].count == 2, line[fields[1].lowerBound] == UInt8(ascii: "-"),
           line[fields[1].lowerBound + 1] == UInt8(ascii: ">")
        {
            waiter = true
            k = 2
        }
        guard fields.count >= k + 5 else { return nil }
        let kind = String(decoding: UnsafeBufferPointer(rebasing: line[fields[k]]), as: UTF8.self)
        let pidField = fields[k + 3]
        var pid: Int32
        if pidField.count == 2, line[pidField.lowerBound] == UInt8(ascii: "-"), line[pidField.lowerBound + 1] == UInt8(ascii: "1") {
            pid = -1
        } else {
            guard let n = decimal(line, pidField), n <= Int(Int32.max) else { return nil }
            pid = Int32(n)
        }
        // MAJ:MIN:INODE, or `<none>:0`.
        let file = fields[k + 4]
        var colons: [Int] = []
        for j in file where line[j] == UInt8(ascii: ":") { colons.append(j) }
        guard colons.count >= 1 else { return nil }
        if String(decoding: UnsafeBufferPointer(rebasing: line[file.lowerBound..<colons[0]]), as: UTF8.self) == "<none>" {
            return ProcLockEntry(id: id, waiter: waiter, kind: kind, pid: pid, device: nil, inode: 0)
        }
        guard colons.count == 2, let inode = decimal(line, colons[1] + 1..<file.upperBound) else { return nil }
        let device = String(decoding: UnsafeBufferPointer(rebasing: line[file.lowerBound..<colons[1]]), as: UTF8.self)
        return ProcLockEntry(id: id, waiter: waiter, kind: kind, pid: pid, device: device, inode: UInt64(inode))
    }

    /// A decimal number of at most 18 digits in `range` of `bytes`.
    private static func decimal(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Int? {
        guard !range.isEmpty, range.count <= 18 else { return nil }
        var n = 0
        for j in range {
            let d = bytes[j] &- UInt8(ascii: "0")
            guard d < 10 else { return nil }
            n = n * 10 + Int(d)
        }
        return n
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
                guard let text = readFile("/proc/\(pid)/fdinfo/\(fd)"), text.containsBytes("OFDLCK") else { continue }
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
            let name = FileIO.name(of: entry)
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
