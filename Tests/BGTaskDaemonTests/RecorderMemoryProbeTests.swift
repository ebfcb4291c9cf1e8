@testable import BGTaskCore
import BGTaskConfig
import CSystemd
@testable import BGTaskDaemon
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What the input recording really holds against its estimate (`RecordMaxBytes=`), at bench row 4's scale
/// scaled down (3,000 apps launched into the foreground, 30,000 assertions). A probe, not a check; it runs
/// only with `BGTASKD_MEMORY_PROBE=1`:
///   BGTASKD_MEMORY_PROBE=1 swift test --skip-build --filter RecorderMemoryProbe
@Suite(.serialized) struct RecorderMemoryProbeTests {
    static var enabled: Bool { getenv("BGTASKD_MEMORY_PROBE") != nil }

    /// The process's `RssAnon`, read with the daemon's own `FileIO`.
    static func anon() -> Int {
        let line = FileIO.read("/proc/self/status")?.split(separator: "\n").first { $0.hasPrefix("RssAnon:") }
        return (line.flatMap { Int($0.split(separator: " ")[1]) } ?? 0) * 1024
    }

    /// Seconds on `clock` (CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID).
    static func seconds(_ clock: clockid_t) -> Double {
        var ts = timespec()
        clock_gettime(clock, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// With `compact`, each checkpoint is compacted as soon as taken (the daemon does it on a thread of its
    /// own, InputRecorder+Compact.swift), and the encodings' time and size are printed.
    static func run(recording maxBytes: Int?, apps appCount: Int = 3_000, compact: Bool = false) {

        let before = anon()
        let apps = (0..<appCount).compactMap { AppID("org.bench.S" + String(100_000 + $0).dropFirst()) }
        var core = DaemonCore(lifecycle: .default, journal: JournalBudget.Limits(), denial: DenialBudget.Limits())
        var recorder = maxBytes.map { InputRecorder(start: core, maxBytes: $0) }
        var request: UInt64 = 0
        var now = Instant.zero
        var encodes: [(cpu: Double, wall: Double, bytes: Int)] = []
        let wall = RealtimeInstant(microsecondsSinceEpoch: 1_700_000_000_000_000)
        func feed(_ input: Input) {
            request += 1
            now = now + .microseconds(10)
            let i = CoreInput.lifecycle(input, request: RequestID(request), from: nil)
            let actions = core.handle(i, now: now, wall: wall)
            if recorder?.append(i, monotonic: now, realtime: wall, actions: actions) == true {
                recorder?.startSegment(core)
                if compact, let (number, checkpoint) = recorder?.checkpointToCompact {
                    let c0 = seconds(CLOCK_THREAD_CPUTIME_ID), w0 = seconds(CLOCK_MONOTONIC)
                    let bytes = (try? InputRecorder.encode(checkpoint)) ?? []
                    malloc_trim(0)
                    encodes.append((seconds(CLOCK_THREAD_CPUTIME_ID) - c0, seconds(CLOCK_MONOTONIC) - w0, bytes.count))
                    recorder?.compacted(number, bytes)
                }
            }
        }
        feed(.appsRegistered(apps.map { AppManifest(id: $0, lifecycleAware: false) }))
        for (n, app) in apps.enumerated() {
            feed(.launchRequested(app, background: true, exclusive: false))
            feed(.appLaunched(app, pid: Int32(10_000 + n)))
            feed(.foregroundRequested(app, exclusive: false))
        }
        for a in 0..<(appCount * 10) {
            feed(.assertionRequested(apps[a / 10], connection: ConnectionID(UInt64(1_000_000 + a % 16)), name: "bench"))
        }
        let after = anon()
        if let r = recorder {
            for e in encodes {
                print("checkpoint encoded: \(Int(e.cpu * 1e3)) ms CPU, \(Int(e.wall * 1e3)) ms, \(e.bytes / 1024) KiB")
            }
            print("recording \(maxBytes ?? 0) B\(compact ? " compacted" : ""): +\((after - before) / 1024) KiB anonymous; estimate \(r.bytes / 1024) KiB, "
                + "\(r.count) inputs (\(r.actionsKept) actions) kept of \(r.taken), \(r.checkpoints) checkpoints")
        } else {
            print("no recording: +\((after - before) / 1024) KiB anonymous")
        }
        withExtendedLifetime((core, recorder)) {}
    }

    @Test(.enabled(if: RecorderMemoryProbeTests.enabled)) func withoutRecording() { Self.run(recording: nil) }
    @Test(.enabled(if: RecorderMemoryProbeTests.enabled)) func recording16MiB() { Self.run(recording: 16 << 20) }
    @Test(.enabled(if: RecorderMemoryProbeTests.enabled)) func recording1GiB() { Self.run(recording: 1 << 30) }
    @Test(.enabled(if: RecorderMemoryProbeTests.enabled)) func recording16MiBCompacted() { Self.run(recording: 16 << 20, compact: true) }

    /// Row 4's scale itself (10,000 apps, 100,000 assertions): the core's encoding and decoding, timed.
    @Test(.enabled(if: RecorderMemoryProbeTests.enabled)) func aCheckpointAtRowFourScale() throws {
        let apps = (0..<10_000).compactMap { AppID("org.bench.S" + String(100_000 + $0).dropFirst()) }
        var core = DaemonCore(lifecycle: .default, journal: JournalBudget.Limits(), denial: DenialBudget.Limits())
        var request: UInt64 = 0
        var now = Instant.zero
        func feed(_ input: Input) {
            request += 1
            now = now + .microseconds(10)
            _ = core.handle(.lifecycle(input, request: RequestID(request), from: nil), now: now)
        }
        feed(.appsRegistered(apps.map { AppManifest(id: $0, lifecycleAware: false) }))
        for (n, app) in apps.enumerated() {
            feed(.launchRequested(app, background: true, exclusive: false))
            feed(.appLaunched(app, pid: Int32(10_000 + n)))
            feed(.foregroundRequested(app, exclusive: false))
        }
        for a in 0..<100_000 {
            feed(.assertionRequested(apps[a / 10], connection: ConnectionID(UInt64(1_000_000 + a % 16)), name: "bench"))
        }
        for _ in 0..<3 {
            let c0 = Self.seconds(CLOCK_THREAD_CPUTIME_ID), w0 = Self.seconds(CLOCK_MONOTONIC)
            let bytes = try InputRecorder.encode(core)
            let c1 = Self.seconds(CLOCK_THREAD_CPUTIME_ID), w1 = Self.seconds(CLOCK_MONOTONIC)
            let back = try InputRecorder.decode(bytes)
            let c2 = Self.seconds(CLOCK_THREAD_CPUTIME_ID)
            print("10,000 apps / 100,000 assertions: \(bytes.count / 1024) KiB compact; encode \(Int((c1 - c0) * 1e3)) ms CPU "
                + "(\(Int((w1 - w0) * 1e3)) ms), decode \(Int((c2 - c1) * 1e3)) ms CPU")
            withExtendedLifetime(back) {}
        }
    }
}
