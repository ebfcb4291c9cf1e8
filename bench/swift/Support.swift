import BGTaskProtocol

#if canImport(Glibc)
import Glibc
#endif

/// CLOCK_MONOTONIC in nanoseconds (the clock of the daemon's deadlines and of every figure here).
func monoNS() -> Int64 { clockNS(CLOCK_MONOTONIC) }
/// CLOCK_REALTIME in nanoseconds.
func realNS() -> Int64 { clockNS(CLOCK_REALTIME) }

func clockNS(_ clock: clockid_t) -> Int64 {
    var ts = timespec()
    clock_gettime(clock, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

/// Sleeps until `deadline` (CLOCK_MONOTONIC nanoseconds).
func sleepUntil(_ deadline: Int64) {
    var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

func fail(_ message: String) -> Never {
    let line = "bgtaskd-bench: \(message)\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
    exit(2)
}

func errnoText() -> String { String(cString: strerror(errno)) }

/// Fills a sockaddr_un for `path`.
func withUnixAddress<R>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
    var addr = sockaddr_un()
    addr.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    precondition(bytes.count < MemoryLayout.size(ofValue: addr.sun_path), "socket path too long: \(path)")
    withUnsafeMutableBytes(of: &addr.sun_path) { raw in
        for (i, b) in bytes.enumerated() { raw[i] = b }
        raw[bytes.count] = 0
    }
    let len = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
    return withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, len) } }
}

/// A blocking stream connection to `path`.
func connectUnix(_ path: String) -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { fail("socket: \(errnoText())") }
    let rc = withUnixAddress(path) { connect(fd, $0, $1) }
    guard rc == 0 else { fail("connect \(path): \(errnoText())") }
    return fd
}

/// A listening stream socket at `path` (an old file there is removed).
func listenUnix(_ path: String) -> Int32 {
    unlink(path)
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { fail("socket: \(errnoText())") }
    guard withUnixAddress(path, { bind(fd, $0, $1) }) == 0 else { fail("bind \(path): \(errnoText())") }
    guard listen(fd, 1024) == 0 else { fail("listen: \(errnoText())") }
    return fd
}

func setNonBlocking(_ fd: Int32, _ on: Bool = true) {
    let flags = fcntl(fd, F_GETFL)
    _ = fcntl(fd, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK)
}

/// Writes all of `bytes` (blocking socket).
func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) {
    var off = 0
    while off < bytes.count {
        let n = send(fd, bytes.baseAddress! + off, bytes.count - off, Int32(MSG_NOSIGNAL))
        if n < 0 && errno == EINTR { continue }
        if n < 0 && errno == EAGAIN {
            var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            _ = poll(&p, 1, -1)
            continue
        }
        guard n > 0 else { fail("write: \(errnoText())") }
        off += n
    }
}

func writeAll(_ fd: Int32, _ bytes: [UInt8]) { bytes.withUnsafeBytes { writeAll(fd, $0) } }

/// Splits the bytes read from one socket into NUL-terminated messages, without copying.
final class MessageReader {
    private var buf: UnsafeMutableRawPointer
    private var capacity: Int
    private var start = 0
    private var end = 0

    init(capacity: Int = 1 << 16) {
        self.capacity = capacity
        buf = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
    }

    deinit { buf.deallocate() }

    /// The next complete message already read (without its NUL), valid until the next call.
    func nextBuffered() -> UnsafeRawBufferPointer? {
        guard end > start, let p = memchr(buf + start, 0, end - start) else { return nil }
        let i = buf.distance(to: p)
        let message = UnsafeRawBufferPointer(start: buf + start, count: i - start)
        start = i + 1
        return message
    }

    /// One read(2) into the buffer: bytes read, 0 at EOF, -1 on error (errno set).
    func fill(_ fd: Int32) -> Int {
        if start == end {
            start = 0
            end = 0
        } else if end == capacity {
            if start > 0 {
                memmove(buf, buf + start, end - start)
                end -= start
                start = 0
            } else {
                let bigger = UnsafeMutableRawPointer.allocate(byteCount: capacity * 2, alignment: 16)
                bigger.copyMemory(from: buf, byteCount: end)
                buf.deallocate()
                buf = bigger
                capacity *= 2
            }
        }
        while true {
            let n = read(fd, buf + end, capacity - end)
            if n < 0 && errno == EINTR { continue }
            if n > 0 { end += n }
            return n
        }
    }

    /// The next message, reading (blocking) as needed; nil at EOF.
    func next(_ fd: Int32) -> UnsafeRawBufferPointer? {
        while true {
            if let m = nextBuffered() { return m }
            if fill(fd) <= 0 { return nil }
        }
    }
}

/// The integer after `"key":` in a JSON text (spaces allowed), or nil.
func intField(_ message: UnsafeRawBufferPointer, _ key: StaticString) -> Int64? {
    let k = UnsafeRawBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount)
    guard message.count > k.count, let base = message.baseAddress else { return nil }
    var i = 0
    let last = message.count - k.count
    while i <= last {
        if memcmp(base + i, k.baseAddress!, k.count) == 0 {
            var j = i + k.count
            while j < message.count && (message[j] == UInt8(ascii: " ") || message[j] == UInt8(ascii: ":")) { j += 1 }
            var v: Int64 = 0
            var digits = 0
            while j < message.count, message[j] >= 48, message[j] <= 57 {
                v = v * 10 + Int64(message[j] - 48)
                j += 1
                digits += 1
            }
            return digits > 0 ? v : nil
        }
        i += 1
    }
    return nil
}

func contains(_ message: UnsafeRawBufferPointer, _ needle: StaticString) -> Bool {
    let n = needle.utf8CodeUnitCount
    guard let base = message.baseAddress, message.count >= n else { return false }
    let first = Int32(needle.utf8Start.pointee)
    var p = base
    var left = message.count
    while left >= n, let hit = memchr(p, first, left - n + 1) {
        if memcmp(hit, needle.utf8Start, n) == 0 { return true }
        let skip = p.distance(to: UnsafeRawPointer(hit)) + 1
        p += skip
        left -= skip
    }
    return false
}

func decodeReply(_ message: UnsafeRawBufferPointer) -> VarlinkReply? {
    try? VarlinkReply.decode(message.bindMemory(to: UInt8.self))
}

/// Starts a detached OS thread (blocking clients need real threads, not the Dispatch pool).
final class ThreadBody: @unchecked Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

@discardableResult
func startThread(_ body: @escaping @Sendable () -> Void) -> pthread_t {
    let box = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
    var t = pthread_t()
    let rc = pthread_create(&t, nil, { p in
        guard let p else { return nil }
        Unmanaged<ThreadBody>.fromOpaque(p).takeRetainedValue().body()
        return nil
    }, box)
    guard rc == 0 else { fail("pthread_create: \(rc)") }
    return t
}

func joinThread(_ t: pthread_t) { pthread_join(t, nil) }

/// Results go to stdout as one JSON object (bench.py reads it).
func emit(_ object: [String: JSON]) {
    let text = JSON.object(object).serialized() + "\n"
    text.withCString { p in
        var off = 0
        let n = strlen(p)
        while off < n {
            let w = write(1, p + off, n - off)
            if w <= 0 { break }
            off += w
        }
    }
}

func ints(_ values: [Int64]) -> JSON { .array(values.map { .int($0) }) }

/// Command-line options: `--name value` pairs.
struct Options {
    var values: [String: String] = [:]
    init(_ args: ArraySlice<String>) {
        var it = args.makeIterator()
        while let a = it.next() {
            guard a.hasPrefix("--") else { fail("unexpected argument \(a)") }
            values[String(a.dropFirst(2))] = it.next() ?? ""
        }
    }
    func string(_ k: String, _ d: String? = nil) -> String {
        guard let v = values[k] ?? d else { fail("missing --\(k)") }
        return v
    }
    func int(_ k: String, _ d: Int? = nil) -> Int {
        guard let v = values[k].flatMap({ Int($0) }) ?? d else { fail("missing or invalid --\(k)") }
        return v
    }
    func list(_ k: String) -> [String] { string(k).split(separator: ",").map(String.init) }
}

/// Reads one app ID a line.
func readLines(_ path: String) -> [String] {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { fail("\(path): \(errnoText())") }
    defer { close(fd) }
    var out: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n <= 0 { break }
        out.append(contentsOf: chunk[0..<n])
    }
    return String(decoding: out, as: UTF8.self).split(separator: "\n").map(String.init).filter { !$0.isEmpty }
}

/// VmRSS, VmHWM of a process, KiB.
func memoryKiB(pid: Int32) -> (rss: Int64, hwm: Int64) {
    let fd = open("/proc/\(pid)/status", O_RDONLY)
    guard fd >= 0 else { return (-1, -1) }
    defer { close(fd) }
    var buf = [UInt8](repeating: 0, count: 8192)
    let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    guard n > 0 else { return (-1, -1) }
    var rss: Int64 = -1
    var hwm: Int64 = -1
    for line in String(decoding: buf[0..<n], as: UTF8.self).split(separator: "\n") {
        let parts = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard parts.count >= 2, let v = Int64(parts[1]) else { continue }
        if parts[0] == "VmRSS:" { rss = v }
        if parts[0] == "VmHWM:" { hwm = v }
    }
    return (rss, hwm)
}

/// CPU time of a process, ns: its process CPU-time clock (`clock_getcpuclockid`), which keeps the time of
/// threads that have exited (the daemon's start-up helpers, a checkpoint's encoding thread): a sum over the
/// threads alive now would lose a thread's time when it exits, and a difference could go negative.
func cpuNS(pid: Int32) -> Int64 {
    var clock = clockid_t()
    var ts = timespec()
    if clock_getcpuclockid(pid, &clock) == 0, clock_gettime(clock, &ts) == 0 {
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
    return threadsCPUNS(pid: pid)
}

/// The threads of a process alive now (/proc/PID/task), as names.
func threadNames(pid: Int32) -> [String] {
    guard let dir = opendir("/proc/\(pid)/task") else { return [] }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        if Int32(name) != nil { names.append(name) }
    }
    return names
}

/// Every thread of `pid` (threads it makes later inherit the mask from the thread that makes them) and the
/// calling thread on `cpus`; nil: on every CPU the machine has (bench.py's `pin_process` and `cpu=`).
func pinThreads(of pid: Int32, cpus: Set<Int>?) {
    var set = cpu_set_t()
    let all = Int(sysconf(Int32(_SC_NPROCESSORS_CONF)))
    withUnsafeMutableBytes(of: &set) { raw in
        let words = raw.bindMemory(to: UInt64.self)
        for cpu in 0..<min(all, words.count * 64) where cpus?.contains(cpu) ?? true {
            words[cpu / 64] |= 1 << UInt64(cpu % 64)
        }
    }
    // glibc declares it only under _GNU_SOURCE, which the Glibc module does not set: found by name.
    typealias SetAffinity = @convention(c) (pid_t, Int, UnsafeRawPointer) -> Int32
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "sched_setaffinity") else { fail("no sched_setaffinity") }
    let setAffinity = unsafeBitCast(symbol, to: SetAffinity.self)
    withUnsafeBytes(of: &set) { mask in
        for name in threadNames(pid: pid) {
            _ = setAffinity(Int32(name)!, mask.count, mask.baseAddress!)  // a thread that just ended: ESRCH
        }
        if setAffinity(0, mask.count, mask.baseAddress!) != 0 { fail("sched_setaffinity: errno \(errno)") }
    }
}

/// CPU time of every thread of a process alive now, ns (the first field of /proc/PID/task/TID/schedstat).
func threadsCPUNS(pid: Int32) -> Int64 {
    var total: Int64 = 0
    for name in threadNames(pid: pid) {
        let fd = open("/proc/\(pid)/task/\(name)/schedstat", O_RDONLY)
        guard fd >= 0 else { continue }
        var buf = [UInt8](repeating: 0, count: 128)
        let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        close(fd)
        guard n > 0, let first = String(decoding: buf[0..<n], as: UTF8.self).split(separator: " ").first,
            let v = Int64(first)
        else { continue }
        total += v
    }
    return total
}
