import BGTaskProtocol

#if canImport(Glibc)
import Glibc
#endif

/// Pipelines `requests` on `fd` in batches (the daemon pauses reading past 256 queued calls) and returns
/// the replies' taskId fields (0 where there is none) and the number of error replies.
func pipeline(_ fd: Int32, _ reader: MessageReader, _ requests: [[UInt8]], batch: Int = 128) -> (ids: [Int64], errors: Int) {
    var ids: [Int64] = []
    ids.reserveCapacity(requests.count)
    var errors = 0
    var i = 0
    var bytes: [UInt8] = []
    while i < requests.count {
        let j = min(i + batch, requests.count)
        bytes.removeAll(keepingCapacity: true)
        for r in requests[i..<j] { bytes += r }
        writeAll(fd, bytes)
        for _ in i..<j {
            guard let m = reader.next(fd) else { fail("connection closed while pipelining") }
            if contains(m, "\"error\"") { errors += 1 }
            ids.append(intField(m, "\"taskId\"") ?? 0)
        }
        i = j
    }
    return (ids, errors)
}

/// Waits until the daemon's journal sink stopped writing (journalEntries + journalDropped unchanged over
/// 200 ms, and journald using under 5% of a CPU; at most 15 s): a set-up burst leaves up to 4096 entries
/// queued, and measuring while journald digests (and writes) them would measure journald. With `daemon`,
/// the daemon quiet too (under 5% of a CPU): a set-up burst of 100,000 Begins fills the input recording's
/// segments, and the checkpoint each new one takes is encoded on a thread of its own (~0.2 s of CPU at
/// 10,000 apps) after the burst; measured in the window, it lands on whichever round it overlaps.
func settleJournal(_ fd: Int32, _ reader: MessageReader, journald: Int32, daemon: Int32 = 0) {
    let request = Array(#"{"method":"io.bgtaskd.Manager.Stats"}"#.utf8) + [0]
    var last: Int64 = -1
    var stable = 0
    var journaldCPU = journald > 0 ? cpuNS(pid: journald) : 0
    var daemonCPU = daemon > 0 ? cpuNS(pid: daemon) : 0
    let giveUp = monoNS() + 15_000_000_000
    while monoNS() < giveUp {
        writeAll(fd, request)
        guard let m = reader.next(fd), let reply = decodeReply(m), let stats = reply.parameters["stats"] else { return }
        let written = (stats["journalEntries"]?.intValue ?? 0) + (stats["journalDropped"]?.intValue ?? 0)
        // journald itself quiet too: under 5 ms of CPU per 100 ms.
        let j = journald > 0 ? cpuNS(pid: journald) : 0
        let journaldQuiet = journald <= 0 || j - journaldCPU < 5_000_000
        journaldCPU = j
        let d = daemon > 0 ? cpuNS(pid: daemon) : 0
        let daemonQuiet = daemon <= 0 || d - daemonCPU < 5_000_000
        daemonCPU = d
        stable = written == last && journaldQuiet && daemonQuiet ? stable + 1 : 0
        if stable >= 2 { return }
        last = written
        usleep(100_000)
    }
}

/// Row 4: per-call cost as the number of live assertions grows, and the daemon's memory.
///
/// `--launch yes` first launches every app into the foreground (unlimited time, no deadline), in
/// `--launch-chunks` parts (20), each followed by `--spawn-turns` (150) posix_spawns of /bin/sleep (the baseline). Then, for each
/// level, background tasks are begun (held by `holders` connections, `perApp` per app, apps in order) until
/// that many are live, and `pairs` sequential Begin → End pairs are timed on a fresh connection on the
/// first app, beside the daemon's VmRSS. `--pin-cpu N`: the timed rounds on CPU N, the daemon's and this one;
/// `--baseline-socket PATH --baseline-pid PID`: each round also times that echo server, taking turns.
func runScale(_ o: Options) {
    let path = o.string("socket")
    let apps = readLines(o.string("apps-file"))
    let levels = o.list("levels").compactMap { Int($0) }
    let perApp = o.int("per-app")
    let pairs = o.int("pairs")
    let pid = Int32(o.int("daemon-pid"))
    let holderCount = o.int("holders", 16)
    let journald = Int32(o.int("journald-pid", 0))
    let pinCPU = o.int("pin-cpu", -1) >= 0 ? o.int("pin-cpu", -1) : nil
    let baseline = o.values["baseline-socket"].map { (path: $0, pid: Int32(o.int("baseline-pid"))) }
    var out: [String: JSON] = [:]

    let control = connectUnix(path)
    let controlReader = MessageReader()
    if o.string("launch", "no") == "yes" {
        // Launch is exclusive (it sends the other foreground apps to the background): launch in the
        // background, then a non-exclusive Foreground, so that every app has unlimited time and no deadline.
        // In `chunks` parts, each followed by `spawnTurns` posix_spawns of /bin/sleep from this process (the
        // baseline, taking turns with the launches: the host's speed moves within a run by more than the
        // difference measured, so a baseline measured at another moment moved the ratio by a quarter).
        // 20 parts of 150 spawns (10 of 100 before): a part's mean spawn is what moved its ratio (a few
        // spawns of several ms among ~150–300 µs ones), and the median of 10 parts' ratios read 1.22× and
        // 1.43× in two runs of one build.
        let chunks = max(1, o.int("launch-chunks", 20)), spawnTurns = max(1, o.int("spawn-turns", 150))
        let perChunk = (apps.count + chunks - 1) / chunks
        var launchNS: Int64 = 0
        var turns: [JSON] = []
        var baselinePids: [pid_t] = []
        let (daemonCPU, journaldCPU) = (cpuNS(pid: pid), journald > 0 ? cpuNS(pid: journald) : 0)
        var start = 0
        while start < apps.count {
            let part = apps[start..<min(start + perChunk, apps.count)]
            start += part.count
            var requests: [[UInt8]] = []
            for app in part {
                requests.append(Array(#"{"method":"io.bgtaskd.Manager.Launch","parameters":{"appId":"\#(app)","background":true}}"#.utf8) + [0])
                requests.append(Array(#"{"method":"io.bgtaskd.Manager.Foreground","parameters":{"appId":"\#(app)","exclusive":false}}"#.utf8) + [0])
            }
            let t = monoNS()
            let r = pipeline(control, controlReader, requests, batch: 64)
            if r.errors > 0 { fail("\(r.errors) launches failed") }
            let launched = monoNS() - t
            launchNS += launched
            var each: [Int64] = []
            let spawned = spawnSleeps(spawnTurns, into: &baselinePids, each: &each)
            each.sort()
            turns.append(.array([.int(launched / Int64(part.count)), .int(spawned / Int64(spawnTurns)),
                                 .int(each[each.count / 2])]))
        }
        // What the launches cost the daemon (all its threads: the spawns, the calls, the writers) and journald
        // (the baseline's spawns are this process's: neither's).
        out["launch_daemon_cpu_ns"] = .int(cpuNS(pid: pid) - daemonCPU)
        if journald > 0 { out["launch_journald_cpu_ns"] = .int(cpuNS(pid: journald) - journaldCPU) }
        out["launch_s"] = .double(Double(launchNS) / 1e9)
        // Per part: [launch ns per app, posix_spawn ns per process (mean, median)].
        out["launch_turns"] = .array(turns)
        killAndReap(baselinePids)
    }
    settleJournal(control, controlReader, journald: journald)
    out["rss_kib_after_launch"] = .int(memoryKiB(pid: pid).rss)

    let holders = (0..<holderCount).map { _ in connectUnix(path) }
    let holderReaders = holders.map { _ in MessageReader() }
    var live = 0
    var denied = 0
    var results: [JSON] = []
    for level in levels {
        guard level <= apps.count * perApp else { fail("level \(level) needs more apps") }
        let t = monoNS()
        var perHolder = [[[UInt8]]](repeating: [], count: holderCount)
        for a in live..<level {
            perHolder[a % holderCount].append(CallShapes(app: apps[a / perApp]).begin)
        }
        for (h, requests) in perHolder.enumerated() where !requests.isEmpty {
            let r = pipeline(holders[h], holderReaders[h], requests)
            denied += r.ids.filter { $0 == 0 }.count + r.errors
        }
        live = level
        let setup = Double(monoNS() - t) / 1e9
        // Five rounds, each after the journal settled: a VM's slow phases last seconds.
        var begin: [Int64] = []
        var end: [Int64] = []
        var cpuPerCall: [Int64] = []
        var m: [String: JSON] = [:]
        // With --pin-cpu N the timed rounds run with the daemon and this client on that CPU (row 1's "pinned
        // to one CPU"): unpinned, each round costs ~20 or ~30 µs a call by where the scheduler put the two
        // ends, and the levels' ratios followed it. The set-up above runs on every CPU.
        if let cpu = pinCPU { pinThreads(of: pid, cpus: [cpu]) }
        defer { if pinCPU != nil { pinThreads(of: pid, cpus: nil) } }
        // With --baseline-socket/--baseline-pid each round also times the bare echo (pinned to the same CPU
        // by bench.py), the two taking turns (the daemon first in even rounds): a level's figures over the
        // echo's of the same round, so that the levels, which follow one another, compare like with like
        // when the host's pace moves between them.
        var wallRatios: [Double] = []
        var cpuRatios: [Double] = []
        var baseWall: [Int64] = []
        var baseCPU: [Int64] = []
        for round in 0..<5 {
            settleJournal(control, controlReader, journald: journald, daemon: pid)
            var ours: (wall: Int64, cpu: Int64) = (0, 0)
            var base: (wall: Int64, cpu: Int64)?
            for side in (round % 2 == 0 ? [0, 1] : [1, 0]) {
                if side == 0 {
                    let cpu0 = cpuNS(pid: pid)
                    m = measurePairs(socket: path, app: apps[0], pairs: pairs / 5, warmup: 0)
                    let (b, e) = (nanoseconds(m, "begin_ns"), nanoseconds(m, "end_ns"))
                    ours = (median(b + e), (cpuNS(pid: pid) - cpu0) / Int64(max(1, b.count + e.count)))
                    cpuPerCall.append(ours.cpu)
                    begin += b
                    end += e
                } else if let baseline {
                    let cpu0 = cpuNS(pid: baseline.pid)
                    let b = measurePairs(socket: baseline.path, app: apps[0], pairs: pairs / 5, warmup: 0)
                    let samples = nanoseconds(b, "begin_ns") + nanoseconds(b, "end_ns")
                    base = (median(samples), (cpuNS(pid: baseline.pid) - cpu0) / Int64(max(1, samples.count)))
                }
            }
            if let base {
                baseWall.append(base.wall)
                baseCPU.append(base.cpu)
                wallRatios.append(Double(ours.wall) / Double(max(1, base.wall)))
                cpuRatios.append(Double(ours.cpu) / Double(max(1, base.cpu)))
            }
        }
        if baseline != nil {
            m["wall_over_baseline_rounds"] = .array(wallRatios.map { .double($0) })
            m["cpu_over_baseline_rounds"] = .array(cpuRatios.map { .double($0) })
            m["baseline_median_ns_rounds"] = ints(baseWall)
            m["baseline_cpu_ns_per_call_rounds"] = ints(baseCPU)
        }
        m["begin_ns"] = ints(begin)
        m["end_ns"] = ints(end)
        let mem = memoryKiB(pid: pid)
        // The median round: a round that a checkpoint's encoding overlaps (the recording begins a segment
        // every ~8 MiB of inputs; 2,000 calls are ~4% of one) is the outlier, not the per-call cost.
        m["daemon_cpu_ns_per_call"] = .int(cpuPerCall.sorted()[cpuPerCall.count / 2])
        m["daemon_cpu_ns_per_call_rounds"] = ints(cpuPerCall)
        m["live_assertions"] = .int(Int64(level))
        m["setup_s"] = .double(setup)
        m["rss_kib"] = .int(mem.rss)
        m["hwm_kib"] = .int(mem.hwm)
        results.append(.object(m))
    }
    out["levels"] = .array(results)
    out["denied"] = .int(Int64(denied))
    emit(out)
    // The assertions live as long as the holders: keep them until bench.py has measured the idle daemon.
    if o.string("hold", "no") == "yes" {
        var b: UInt8 = 0
        _ = read(0, &b, 1)
    }
    for fd in holders { close(fd) }
}

/// The samples `measurePairs` put under `key`.
private func nanoseconds(_ m: [String: JSON], _ key: String) -> [Int64] {
    m[key]?.arrayValue?.compactMap { $0.intValue } ?? []
}

/// The median of `values` (the upper one of an even count; 0 when empty).
private func median(_ values: [Int64]) -> Int64 {
    guard !values.isEmpty else { return 0 }
    return values.sorted()[values.count / 2]
}

/// posix_spawn of `/bin/sleep 600`, `count` times, one after the other (each returns once its child has
/// exec'd, as the daemon's launcher does), the pids appended to `pids`; returns the nanoseconds it took.
func spawnSleeps(_ count: Int, into pids: inout [pid_t]) -> Int64 {
    var each: [Int64] = []
    return spawnSleeps(count, into: &pids, each: &each)
}

/// The same, each spawn's nanoseconds appended to `each`.
func spawnSleeps(_ count: Int, into pids: inout [pid_t], each: inout [Int64]) -> Int64 {
    let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sleep"), strdup("600"), nil]
    defer { for p in argv { free(p) } }
    let t0 = monoNS()
    var last = t0
    for _ in 0..<count {
        var child: pid_t = 0
        let rc = argv.withUnsafeBufferPointer { posix_spawn(&child, "/bin/sleep", nil, nil, $0.baseAddress!, environ) }
        if rc != 0 { fail("posix_spawn: \(rc)") }
        pids.append(child)
        let now = monoNS()
        each.append(now - last)
        last = now
    }
    return last - t0
}

/// SIGKILL to every one of `pids`, then each reaped.
func killAndReap(_ pids: [pid_t]) {
    for child in pids { kill(child, SIGKILL) }
    for child in pids {
        var status: Int32 = 0
        while waitpid(child, &status, 0) < 0 && errno == EINTR {}
    }
}
