import BGTaskCore
import BGTaskDaemon
import BGTaskProtocol

#if canImport(Glibc)
import Glibc
#endif

/// SPEC §17, what a checkpoint of the recording's ring costs with `apps` apps (docs/performance.md): the
/// copy of the core is O(1); the first input after it that changes a buffer the checkpoint shares (the app
/// records, the deadlines) copies that buffer once, on the daemon's queue. Every app is launched into the
/// background (records, deadlines in use); then, `rounds` times, a checkpoint is taken (two held at a time,
/// as the ring does) and two inputs each bring one app to the foreground: the first pays the copy, the
/// second does not. Emits both times (µs), the RSS the first grows by, the RSS two held checkpoints take,
/// and the size of one checkpoint written as JSON (`GetRecording`, off the queue). Then `assertions`
/// assertions are taken (ten an app) and the core encoded as the recorder keeps a checkpoint
/// (InputRecorder+Compact.swift, off the queue) and decoded back: its bytes and the CPU time of each.
func measureCheckpoint(apps n: Int, rounds: Int, assertions: Int = 0) {
    var core = RecordingStart(lifecycle: .default, journal: JournalBudget.Limits(), denial: DenialBudget.Limits()).makeCore()
    var t: Int64 = 0
    var request: UInt64 = 0
    func call(_ input: Input) -> Double {
        t += 1_000
        request += 1
        let a = monoNS()
        _ = core.handle(.lifecycle(input, request: RequestID(request), from: nil), now: Instant(microseconds: t))
        return Double(monoNS() - a) / 1_000
    }
    let ids = (0..<n).compactMap { AppID("org.bench.C\($0)") }
    for app in ids {
        _ = core.handle(.lifecycle(.appRegistered(AppManifest(id: app, lifecycleAware: true)), request: nil, from: nil), now: .zero)
    }
    for (k, app) in ids.enumerated() {
        _ = call(.launchRequested(app, background: true, exclusive: false))
        t += 10
        _ = core.handle(.lifecycle(.appLaunched(app, pid: Int32(10_000 + k)), request: nil, from: nil), now: Instant(microseconds: t))
    }
    let before = residentBytes()
    var held: [DaemonCore] = []
    var firsts: [Double] = [], seconds: [Double] = [], grown: [Int] = []
    for round in 0..<rounds {
        held.append(core)
        if held.count > 2 { held.removeFirst() }
        let rss = residentBytes()
        firsts.append(call(.foregroundRequested(ids[round % n], exclusive: false)))
        grown.append(residentBytes() - rss)
        seconds.append(call(.foregroundRequested(ids[(round + n / 2) % n], exclusive: false)))
    }
    let heldBytes = residentBytes() - before
    let a = monoNS()
    let json = (try? JSON.encode(core).serialized().utf8.count) ?? -1
    let encodeMS = Double(monoNS() - a) / 1e6
    for a in 0..<assertions {
        _ = call(.assertionRequested(ids[(a / 10) % n], connection: ConnectionID(UInt64(1_000_000 + a % 16)), name: "bench"))
    }
    let c0 = threadCPUNS()
    let compact = (try? InputRecorder.encode(core)) ?? []
    let c1 = threadCPUNS()
    let decoded = (try? InputRecorder.decode(compact)) != nil
    let c2 = threadCPUNS()
    func median(_ v: [Double]) -> Double { v.sorted()[v.count / 2] }
    emit([
        "apps": .int(Int64(n)), "first_us": .double(median(firsts)), "first_max_us": .double(firsts.max() ?? 0),
        "second_us": .double(median(seconds)), "first_rss_kib": .int(Int64(grown.sorted()[grown.count / 2] / 1024)),
        "held_rss_kib": .int(Int64(heldBytes / 1024)), "checkpoint_json_bytes": .int(Int64(json)),
        "encode_ms": .double(encodeMS), "assertions": .int(Int64(assertions)),
        "compact_bytes": .int(Int64(compact.count)), "compact_encode_cpu_ms": .double(Double(c1 - c0) / 1e6),
        "compact_decode_cpu_ms": .double(Double(c2 - c1) / 1e6), "compact_decoded": .bool(decoded),
    ])
}

/// The resident set (/proc/self/statm), in bytes.
private func residentBytes() -> Int {
    guard let f = fopen("/proc/self/statm", "r") else { return 0 }
    defer { fclose(f) }
    var buf = [CChar](repeating: 0, count: 128)
    guard fgets(&buf, 128, f) != nil else { return 0 }
    let line = buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
    let fields = String(decoding: line, as: UTF8.self).split(separator: " ")
    guard fields.count >= 2, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// The calling thread's CPU time, ns.
private func threadCPUNS() -> Int {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}
