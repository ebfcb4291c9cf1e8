@testable import BGTaskCore
import BGTaskConfig
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

    static func run(recording maxBytes: Int?) {

        let before = anon()
        let apps = (0..<3_000).compactMap { AppID("org.bench.S" + String(100_000 + $0).dropFirst()) }
        var core = DaemonCore(lifecycle: .default, journal: JournalBudget.Limits(), denial: DenialBudget.Limits())
        var recorder = maxBytes.map { InputRecorder(start: core, maxBytes: $0) }
        var request: UInt64 = 0
        var now = Instant.zero
        let wall = RealtimeInstant(microsecondsSinceEpoch: 1_700_000_000_000_000)
        func feed(_ input: Input) {
            request += 1
            now = now + .microseconds(10)
            let i = CoreInput.lifecycle(input, request: RequestID(request), from: nil)
            let actions = core.handle(i, now: now, wall: wall)
            if recorder?.append(i, monotonic: now, realtime: wall, actions: actions) == true { recorder?.startSegment(core) }
        }
        feed(.appsRegistered(apps.map { AppManifest(id: $0, lifecycleAware: false) }))
        for (n, app) in apps.enumerated() {
            feed(.launchRequested(app, background: true, exclusive: false))
            feed(.appLaunched(app, pid: Int32(10_000 + n)))
            feed(.foregroundRequested(app, exclusive: false))
        }
        for a in 0..<30_000 {
            feed(.assertionRequested(apps[a / 10], connection: ConnectionID(UInt64(1_000_000 + a % 16)), name: "bench"))
        }
        let after = anon()
        if let r = recorder {
            print("recording \(maxBytes ?? 0) B: +\((after - before) / 1024) KiB anonymous; estimate \(r.bytes / 1024) KiB, "
                + "\(r.count) inputs (\(r.actionsKept) actions) kept of \(r.taken), \(r.checkpoints) checkpoints")
        } else {
            print("no recording: +\((after - before) / 1024) KiB anonymous")
        }
        withExtendedLifetime((core, recorder)) {}
    }

    @Test(.enabled(if: RecorderMemoryProbeTests.enabled)) func withoutRecording() { Self.run(recording: nil) }
    @Test(.enabled(if: RecorderMemoryProbeTests.enabled)) func recording16MiB() { Self.run(recording: 16 << 20) }
    @Test(.enabled(if: RecorderMemoryProbeTests.enabled)) func recording1GiB() { Self.run(recording: 1 << 30) }
}
