import BGTaskProtocol

#if canImport(Glibc)
import Glibc
#endif

/// The subcommands bench/bench.py runs.
enum BenchTool {
    static func run(_ args: [String]) {
        guard let command = args.first else { fail("usage: bgtaskd-bench COMMAND [--option value]…") }
        let o = Options(args.dropFirst())
        signal(SIGPIPE, SIG_IGN)
        switch command {
        case "echo-server":
            runEchoServer(socket: o.string("socket"), replySizes: o.list("reply-sizes").compactMap { Int($0) })
        case "journal-echo-server":
            runEchoServer(socket: o.string("socket"), replySizes: o.list("reply-sizes").compactMap { Int($0) }, journal: true)
        case "dispatch-echo-server":
            runDispatchEchoServer(socket: o.string("socket"), replySizes: o.list("reply-sizes").compactMap { Int($0) })
        case "dispatch-epoll-echo-server":
            runDispatchEpollEchoServer(socket: o.string("socket"), replySizes: o.list("reply-sizes").compactMap { Int($0) })
        case "sync-epoll-echo-server":
            runDispatchEpollEchoServer(
                socket: o.string("socket"), replySizes: o.list("reply-sizes").compactMap { Int($0) }, syncLoop: true)
        case "rtt":
            emit(measurePairs(socket: o.string("socket"), app: o.string("app"), pairs: o.int("pairs"), warmup: o.int("warmup", 200)))
        case "rtt-interleaved":
            emit(measureInterleavedPairs(
                sockets: o.list("sockets"), app: o.string("app"), pairs: o.int("pairs"), warmup: o.int("warmup", 200),
                block: o.int("block", 1)))
        case "throughput":
            emit(measureThroughput(
                socket: o.string("socket"), apps: o.list("apps"), clients: o.int("clients"), warmupMS: o.int("warmup-ms", 300),
                seconds: Double(o.string("seconds")) ?? 2,
                watch: o.values["watch-pids"].map { $0.split(separator: ",").compactMap { Int32($0) } } ?? []))
        case "deadlines":
            runDeadlineClient(o)
        case "timer-baseline":
            runTimerBaseline(o)
        case "scale":
            runScale(o)
        case "spawn-baseline":
            spawnBaseline(count: o.int("count"))
        case "notify-ready":
            notifyReady()
        case "wake-discipline":
            wakeDiscipline(apps: o.int("apps", 50), hours: o.int("hours", 24), alignment: Int64(o.int("alignment", 300)))
        case "freeze-baseline":
            freezeBaseline(cgroup: o.string("cgroup"))
        case "resume-relay":
            resumeRelay(socket: o.string("socket"), freeze: o.string("freeze"), appFD: Int32(o.int("app-fd")))
        case "proc-locks":
            procLocks(count: o.int("count"), rounds: o.int("rounds", 200), path: o.string("path"))
        case "checkpoint":
            measureCheckpoint(apps: o.int("apps", 10_000), rounds: o.int("rounds", 8), assertions: o.int("assertions", 0))
        case "record-loop":
            recordLoop(pairs: o.int("pairs", 60_000), maxBytes: o.int("max-bytes", 16 << 20), record: o.int("record", 1) != 0,
                       busyApps: o.int("busy-apps", 0), compactBlocks: o.int("compact-blocks", 1) != 0,
                       render: o.int("render", 1) != 0)
        case "decode-cold":
            decodeCold(cycles: o.int("cycles", 100), sleepMS: o.int("sleep-ms", 0), message: o.string("message"), manager: o.int("manager", 1) != 0)
        case "resume-core":
            resumeCore(cycles: o.int("cycles", 2_000), apps: o.int("apps", 64), sleepMS: o.int("sleep-ms", 0))
        default:
            fail("unknown command \(command)")
        }
    }

    /// The launch baseline alone: posix_spawn of `/bin/sleep 600`, `count` times, then every child is
    /// killed and reaped (row 4 takes turns with the launches instead: `runScale`).
    static func spawnBaseline(count: Int) {
        var pids: [pid_t] = []
        let elapsed = spawnSleeps(count, into: &pids)
        killAndReap(pids)
        emit(["spawn_ns_per_process": .int(elapsed / Int64(count)), "count": .int(Int64(count))])
    }

    /// The start-up baseline: a process of this size that sends READY=1 as soon as it runs.
    static func notifyReady() {
        guard let p = getenv("NOTIFY_SOCKET") else { fail("no NOTIFY_SOCKET") }
        let path = String(cString: p)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let message = Array("READY=1".utf8)
        let n = withUnixAddress(path) { addr, len in
            message.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, 0, addr, len) }
        }
        if n < 0 { fail("sendto \(path): \(errnoText())") }
        close(fd)
    }
}
