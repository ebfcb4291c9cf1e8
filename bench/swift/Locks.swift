import BGTaskDaemon
import BGTaskProtocol

#if canImport(Glibc)
import Glibc
#endif

extension BenchTool {
    /// SPEC §14's lock check: `count` POSIX locks held by this process (one byte each, apart, so each is a
    /// line of /proc/locks), then `rounds` times: /proc/locks read only (the baseline), read + parse + match
    /// to an app holding none (the daemon's check before each freeze), and the same with no lock taken.
    static func procLocks(count: Int, rounds: Int, path: String) {
        let before = measureLockScan(rounds: rounds)
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { fail("open \(path): \(errnoText())") }
        for i in 0..<count {
            var lock = flock()
            lock.l_type = Int16(F_WRLCK)
            lock.l_whence = Int16(SEEK_SET)
            lock.l_start = off_t(2 * i)
            lock.l_len = 1
            guard fcntl(fd, F_SETLK, &lock) == 0 else { fail("fcntl F_SETLK: \(errnoText())") }
        }
        let lines = (readWhole("/proc/locks") ?? "").split(separator: "\n").count
        let after = measureLockScan(rounds: rounds)
        close(fd)
        unlink(path)
        emit([
            "lines": .int(Int64(lines)), "lines_before": .int(before.lines),
            "read_ns": ints(after.read), "scan_ns": ints(after.scan), "parse_ns": ints(after.parse),
            "read_ns_no_extra": ints(before.read), "scan_ns_no_extra": ints(before.scan),
        ])
    }

    private static func measureLockScan(rounds: Int) -> (read: [Int64], scan: [Int64], parse: [Int64], lines: Int64) {
        var read: [Int64] = []
        var scan: [Int64] = []
        var parse: [Int64] = []
        // An app of one process that holds no lock: pid 1 is never this process.
        let app: [Int32] = [1]
        var lines: Int64 = 0
        for _ in 0..<rounds {
            let t0 = monoNS()
            let text = readWhole("/proc/locks") ?? ""
            let t1 = monoNS()
            let seen = ProcLocks.scanCounts(pids: app)
            let t2 = monoNS()
            let entries = ProcLocks.parse(text)
            let t3 = monoNS()
            read.append(t1 - t0)
            scan.append(t2 - t1)
            parse.append(t3 - t2)
            if entries.count < 0 { fail("impossible") }
            lines = Int64(text.split(separator: "\n").count)
            if seen.held < 0 { fail("impossible") }
        }
        return (read, scan, parse, lines)
    }

    private static func readWhole(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            bytes += buffer[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

}
