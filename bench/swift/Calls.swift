import BGTaskProtocol
import CSystemd
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The bytes of the two calls measured: BeginBackgroundTask, then EndBackgroundTask of the task it got.
struct CallShapes: Sendable {
    let app: String
    let begin: [UInt8]

    init(app: String) {
        self.app = app
        begin = Array(
            #"{"method":"io.bgtaskd.App.BeginBackgroundTask","parameters":{"appId":"\#(app)","name":"bench"}}"#.utf8)
            + [0]
    }

    func end(_ task: Int64) -> [UInt8] {
        Array(#"{"method":"io.bgtaskd.App.EndBackgroundTask","parameters":{"appId":"\#(app)","taskId":\#(task)}}"#.utf8)
            + [0]
    }
}

/// One Begin → End pair on a blocking connection, each call waiting for its reply (sequential).
struct PairResult {
    var begin: Int64
    var end: Int64
    var granted: Bool
    var error: Bool
    var beginReplyBytes: Int
    var endReplyBytes: Int
}

func onePair(_ fd: Int32, _ reader: MessageReader, _ shapes: CallShapes) -> PairResult {
    let t0 = monoNS()
    writeAll(fd, shapes.begin)
    guard let m1 = reader.next(fd) else { fail("connection closed during BeginBackgroundTask") }
    let t1 = monoNS()
    let task = intField(m1, "\"taskId\"") ?? 0
    var error = contains(m1, "\"error\"")
    let beginBytes = m1.count + 1
    writeAll(fd, shapes.end(task))
    guard let m2 = reader.next(fd) else { fail("connection closed during EndBackgroundTask") }
    let t2 = monoNS()
    error = error || contains(m2, "\"error\"")
    return PairResult(begin: t1 - t0, end: t2 - t1, granted: task > 0, error: error,
                      beginReplyBytes: beginBytes, endReplyBytes: m2.count + 1)
}

/// Sequential round trips on one connection: per-pair and per-call latencies (ns).
func measurePairs(socket path: String, app: String, pairs: Int, warmup: Int) -> [String: JSON] {
    let fd = connectUnix(path)
    defer { close(fd) }
    let reader = MessageReader()
    let shapes = CallShapes(app: app)
    for _ in 0..<warmup { _ = onePair(fd, reader, shapes) }
    var begin: [Int64] = []
    var end: [Int64] = []
    begin.reserveCapacity(pairs)
    end.reserveCapacity(pairs)
    var denied = 0
    var errors = 0
    var sizes = (0, 0)
    for _ in 0..<pairs {
        let r = onePair(fd, reader, shapes)
        begin.append(r.begin)
        end.append(r.end)
        if !r.granted { denied += 1 }
        if r.error { errors += 1 }
        sizes = (r.beginReplyBytes, r.endReplyBytes)
    }
    return [
        "begin_ns": ints(begin), "end_ns": ints(end), "denied": .int(Int64(denied)), "errors": .int(Int64(errors)),
        "request_bytes": .array([.int(Int64(shapes.begin.count)), .int(Int64(shapes.end(1).count))]),
        "reply_bytes": .array([.int(Int64(sizes.0)), .int(Int64(sizes.1))]),
    ]
}

/// Sequential round trips on several servers in turn, one Begin → End pair each (A B C, then C B A, …): a
/// server's samples are taken microseconds from the others', so a drift of the host's cross-CPU wake-up
/// (which moves over milliseconds to seconds on a VM) weighs on every server alike. Per server, in the
/// order of `sockets`: the per-call latencies (ns) and the counts `measurePairs` gives.
func measureInterleavedPairs(sockets: [String], app: String, pairs: Int, warmup: Int, block: Int = 1) -> [String: JSON] {
    let fds = sockets.map { connectUnix($0) }
    defer { fds.forEach { close($0) } }
    let readers = sockets.map { _ in MessageReader() }
    let shapes = CallShapes(app: app)
    for _ in 0..<warmup {
        for j in fds.indices { _ = onePair(fds[j], readers[j], shapes) }
    }
    var begin = [[Int64]](repeating: [], count: fds.count)
    var end = [[Int64]](repeating: [], count: fds.count)
    var denied = [Int](repeating: 0, count: fds.count)
    var errors = [Int](repeating: 0, count: fds.count)
    for j in fds.indices {
        begin[j].reserveCapacity(pairs)
        end[j].reserveCapacity(pairs)
    }
    for (n, first) in stride(from: 0, to: pairs, by: max(1, block)).enumerated() {
        for j in (n % 2 == 0 ? Array(fds.indices) : fds.indices.reversed()) {
            for _ in first..<min(pairs, first + max(1, block)) {
                let r = onePair(fds[j], readers[j], shapes)
                begin[j].append(r.begin)
                end[j].append(r.end)
                if !r.granted { denied[j] += 1 }
                if r.error { errors[j] += 1 }
            }
        }
    }
    return ["servers": .array(fds.indices.map { j in
        .object(["begin_ns": ints(begin[j]), "end_ns": ints(end[j]), "denied": .int(Int64(denied[j])),
                 "errors": .int(Int64(errors[j]))])
    })]
}

/// `clients` threads, each with its own connection, each doing sequential Begin → End pairs; counts the
/// calls completed in the measuring window (after a warm-up).
/// `watch`: processes whose CPU time is read at the window's start and end (as is this process's, the clients'),
/// so that a figure per call is of the same calls the rate counts: `cpu_ns` in the result, by pid and "clients"
/// (and "clients_switches": the clients' context switches, voluntary and not).
func measureThroughput(socket path: String, apps: [String], clients: Int, warmupMS: Int, seconds: Double,
                       watch: [Int32] = []) -> [String: JSON] {
    let start = monoNS() + 200_000_000  // every thread connected before
    let windowStart = start + Int64(warmupMS) * 1_000_000
    let windowEnd = windowStart + Int64(seconds * 1e9)
    let windowCPU = Mutex<[String: Int64]>([:])
    var watcher: pthread_t?
    if !watch.isEmpty {
        watcher = startThread {
            func sample() -> [String: Int64] {
                var usage = rusage()
                getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
                var m = ["clients": clockNS(CLOCK_PROCESS_CPUTIME_ID),
                         "clients_switches": Int64(usage.ru_nvcsw + usage.ru_nivcsw)]
                for pid in watch { m[String(pid)] = cpuNS(pid: pid) }
                return m
            }
            sleepUntil(windowStart)
            let a = sample()
            sleepUntil(windowEnd)
            let b = sample()
            windowCPU.withLock { m in for (k, v) in b { m[k] = v - (a[k] ?? v) } }
        }
    }
    let totals = Mutex<(calls: Int, denied: Int, errors: Int, perClient: [Int])>((0, 0, 0, []))
    var threads: [pthread_t] = []
    for k in 0..<clients {
        let app = apps[k % apps.count]
        threads.append(startThread {
            let fd = connectUnix(path)
            let reader = MessageReader()
            let shapes = CallShapes(app: app)
            sleepUntil(start)
            var calls = 0
            var denied = 0
            var errors = 0
            while true {
                let r = onePair(fd, reader, shapes)
                let now = monoNS()
                if now > windowEnd { break }
                if now >= windowStart {
                    calls += 2
                    if !r.granted { denied += 1 }
                    if r.error { errors += 1 }
                }
            }
            close(fd)
            totals.withLock {
                $0.calls += calls
                $0.denied += denied
                $0.errors += errors
                $0.perClient.append(calls)
            }
        })
    }
    for t in threads { joinThread(t) }
    if let watcher { joinThread(watcher) }
    let t = totals.withLock { $0 }
    let perClient = t.perClient.sorted()
    var result: [String: JSON] = [
        "calls": .int(Int64(t.calls)), "seconds": .double(seconds),
        "calls_per_s": .double(Double(t.calls) / seconds), "denied": .int(Int64(t.denied)),
        "errors": .int(Int64(t.errors)), "clients": .int(Int64(clients)),
        "min_client_calls": .int(Int64(perClient.first ?? 0)), "max_client_calls": .int(Int64(perClient.last ?? 0)),
    ]
    if !watch.isEmpty {
        result["cpu_ns"] = .object(windowCPU.withLock { $0 }.mapValues { .int($0) })
    }
    return result
}

/// The baseline server: a single-threaded epoll loop that answers every NUL-terminated message with a
/// canned reply of the daemon's size (alternately the Begin reply and the End reply), parsing nothing.
/// With `journal`, the echo also sends one journal entry per message, with the fields of a bgtaskd
/// grant/end decision (SPEC §11, OBJECT_PID included), synchronously: what the machine allows for a server
/// that journals every call, as SPEC §11 asks of bgtaskd.
func runEchoServer(socket path: String, replySizes: [Int], journal: Bool = false) -> Never {
    let replies = cannedReplies(replySizes)
    let journalEntry = JournalEntryBaseline()
    let lfd = listenUnix(path)
    setNonBlocking(lfd)
    let ep = Epoll(capacity: 256)
    ep.add(lfd)
    var toggle = [Bool](repeating: false, count: 65536)
    let scratch = UnsafeMutableRawPointer.allocate(byteCount: 1 << 16, alignment: 16)
    var out: [UInt8] = []
    out.reserveCapacity(1 << 16)
    while true {
        for fd in ep.ready(timeoutMS: -1) {
            if fd == lfd {
                while true {
                    let c = accept(lfd, nil, nil)
                    if c < 0 { break }
                    toggle[Int(c)] = false
                    ep.add(c)
                }
                continue
            }
            let r = read(fd, scratch, 1 << 16)
            if r <= 0 {
                ep.remove(fd)
                close(fd)
                continue
            }
            out.removeAll(keepingCapacity: true)
            var p = scratch
            var left = r
            while left > 0, let z = memchr(p, 0, left) {
                let consumed = p.distance(to: z) + 1
                out.append(contentsOf: replies[toggle[Int(fd)] ? 1 : 0])
                toggle[Int(fd)].toggle()
                p = p + consumed
                left -= consumed
                if journal { journalEntry.send(grant: toggle[Int(fd)]) }
            }
            if !out.isEmpty { writeAll(fd, out) }
        }
    }
}

/// One journal entry shaped like bgtaskd's grant/end decisions: the same field names and similar values.
final class JournalEntryBaseline {
    private var serial = 0
    private let pid = String(getpid())

    func send(grant: Bool) {
        serial += 1
        let fields = [
            "MESSAGE=" + (grant ? "Granted background task \(serial) to org.bench.C00" : "Ended background task \(serial) of org.bench.C00"),
            "PRIORITY=6", "SYSLOG_IDENTIFIER=bgtaskd-bench", "CODE_FILE=BGTaskDaemon/DaemonService.swift",
            "CODE_LINE=432", "CODE_FUNC=record(_:peer:)", "MESSAGE_ID=4f2b6c1e9a8d4c7b9e3f5a1d2c6b8e90",
            "BGTASKD_DECISION=" + (grant ? "grant" : "end"), "BGTASKD_REASON=" + (grant ? "app-request" : "app-request"),
            "BGTASKD_APP=org.bench.C00", "BGTASKD_STATE=active", "BGTASKD_TASK_ID=\(serial)",
            "BGTASKD_REMAINING_USEC=30000000", "BGTASKD_PID=" + pid, "OBJECT_PID=" + pid, "BGTASKD_UID=0",
            "BGTASKD_PEER_PID=" + pid,
        ]
        var bytes: [UInt8] = []
        var ends: [Int] = []
        for f in fields {
            bytes.append(contentsOf: f.utf8)
            ends.append(bytes.count)
        }
        bytes.withUnsafeMutableBytes { raw in
            guard let base = raw.baseAddress else { return }
            var iov: [iovec] = []
            var start = 0
            for end in ends {
                iov.append(iovec(iov_base: base + start, iov_len: end - start))
                start = end
            }
            _ = sd_journal_sendv(&iov, Int32(iov.count))
        }
    }
}

/// The same canned-reply server built the way the daemon is: one serial DispatchQueue, one
/// DispatchSourceRead per connection, replies written from the handler. Shows what the Dispatch event
/// loop itself costs on this machine (bench.py prints it as a second baseline).
final class DispatchEchoServer: @unchecked Sendable {
    // @unchecked: everything is touched only on `queue`.
    let queue = DispatchQueue(label: "bench.echo")
    let replies: [[UInt8]]
    var listener: (any DispatchSourceRead)?
    var connections: [Int32: (source: any DispatchSourceRead, toggle: Bool)] = [:]
    let scratch = UnsafeMutableRawPointer.allocate(byteCount: 1 << 16, alignment: 16)

    init(replies: [[UInt8]]) { self.replies = replies }

    func start(_ lfd: Int32) {
        queue.async { [self] in
            let s = DispatchSource.makeReadSource(fileDescriptor: lfd, queue: queue)
            s.setEventHandler { [weak self] in self?.accepted(lfd) }
            listener = s
            s.resume()
        }
    }

    private func accepted(_ lfd: Int32) {
        while true {
            let c = accept(lfd, nil, nil)
            if c < 0 { return }
            setNonBlocking(c)
            let s = DispatchSource.makeReadSource(fileDescriptor: c, queue: queue)
            s.setEventHandler { [weak self] in self?.readable(c) }
            s.setCancelHandler { close(c) }
            connections[c] = (s, false)
            s.resume()
        }
    }

    private func readable(_ fd: Int32) {
        let r = read(fd, scratch, 1 << 16)
        if r <= 0 {
            if r < 0 && errno == EAGAIN { return }
            connections.removeValue(forKey: fd)?.source.cancel()
            return
        }
        var out: [UInt8] = []
        var p = scratch
        var left = r
        while left > 0, let z = memchr(p, 0, left) {
            let consumed = p.distance(to: z) + 1
            let t = connections[fd]?.toggle ?? false
            out.append(contentsOf: replies[t ? 1 : 0])
            connections[fd]?.toggle = !t
            p = p + consumed
            left -= consumed
        }
        if !out.isEmpty { writeAll(fd, out) }
    }
}

func cannedReplies(_ replySizes: [Int]) -> [[UInt8]] {
    func canned(_ text: String, _ size: Int) -> [UInt8] {
        var b = Array(text.utf8)
        while b.count < size - 1 { b.append(UInt8(ascii: " ")) }
        return b + [0]
    }
    return [canned(#"{"parameters":{"taskId":1}}"#, replySizes[0]), canned("{}", replySizes[1])]
}

func runDispatchEchoServer(socket path: String, replySizes: [Int]) -> Never {
    let lfd = listenUnix(path)
    setNonBlocking(lfd)
    let server = DispatchEchoServer(replies: cannedReplies(replySizes))
    server.start(lfd)
    while true { sleep(1000) }
}

/// The canned-reply server with one Dispatch read source on an epoll descriptor that holds every client
/// socket: a wake-up of the serial queue serves every connection that is ready, instead of one
/// source (and one manager → worker hand-off) per connection and message. What the daemon could do.
final class DispatchEpollEchoServer: @unchecked Sendable {
    // @unchecked: everything is touched only on `queue`.
    let queue = DispatchQueue(label: "bench.echo")
    let replies: [[UInt8]]
    let ep = Epoll(capacity: 256)
    let lfd: Int32
    var source: (any DispatchSourceRead)?
    var toggle = [Bool](repeating: false, count: 65536)
    let scratch = UnsafeMutableRawPointer.allocate(byteCount: 1 << 16, alignment: 16)

    init(replies: [[UInt8]], lfd: Int32) {
        self.replies = replies
        self.lfd = lfd
    }

    func start() {
        ep.add(lfd)
        queue.async { [self] in
            let s = DispatchSource.makeReadSource(fileDescriptor: ep.fd, queue: queue)
            s.setEventHandler { [weak self] in self?.ready() }
            source = s
            s.resume()
        }
    }

    /// The variant without Dispatch's hand-off: a thread of its own blocks in poll(2) on the epoll fd
    /// and runs each turn with `queue.sync`, which executes the block inline on that thread when the
    /// queue is idle — one wake-up per message, as the bare echo. An experiment for the README's
    /// performance notes (the daemon's rules have Dispatch sources do the waiting).
    func startSyncLoop() {
        ep.add(lfd)
        _ = startThread { [self] in
            var p = pollfd(fd: ep.fd, events: Int16(POLLIN), revents: 0)
            while true {
                p.revents = 0
                if poll(&p, 1, -1) <= 0 { continue }
                queue.sync { ready() }
            }
        }
    }

    private func ready() {
        var out: [UInt8] = []
        for fd in ep.ready(timeoutMS: 0) {
            if fd == lfd {
                while true {
                    let c = accept(lfd, nil, nil)
                    if c < 0 { break }
                    toggle[Int(c)] = false
                    ep.add(c)
                }
                continue
            }
            let r = read(fd, scratch, 1 << 16)
            if r <= 0 {
                ep.remove(fd)
                close(fd)
                continue
            }
            out.removeAll(keepingCapacity: true)
            var p = scratch
            var left = r
            while left > 0, let z = memchr(p, 0, left) {
                let consumed = p.distance(to: z) + 1
                out.append(contentsOf: replies[toggle[Int(fd)] ? 1 : 0])
                toggle[Int(fd)].toggle()
                p = p + consumed
                left -= consumed
            }
            if !out.isEmpty { writeAll(fd, out) }
        }
    }
}

func runDispatchEpollEchoServer(socket path: String, replySizes: [Int], syncLoop: Bool = false) -> Never {
    let lfd = listenUnix(path)
    setNonBlocking(lfd)
    let server = DispatchEpollEchoServer(replies: cannedReplies(replySizes), lfd: lfd)
    if syncLoop { server.startSyncLoop() } else { server.start() }
    while true { sleep(1000) }
}
