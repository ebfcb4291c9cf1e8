@testable import BGTaskCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Where the core's memory goes at bench row 4's scale (10,000 apps in the foreground, 100,000 assertions
/// on 16 connections): the process's anonymous memory (`RssAnon`) after each step, and the records' sizes. A probe,
/// not a check (nothing is asserted of a figure); it runs only with `BGTASKD_MEMORY_PROBE=1`:
///   BGTASKD_MEMORY_PROBE=1 swift test --skip-build --filter MemoryProbe
@Suite struct MemoryProbeTests {
    static var enabled: Bool { getenv("BGTASKD_MEMORY_PROBE") != nil }

    @Test(.enabled(if: MemoryProbeTests.enabled)) func recordFields() {
        print("AppRecord fields: PendingLaunch? \(MemoryLayout<PendingLaunch?>.size), Grace \(MemoryLayout<Grace>.size), "
            + "Wake? \(MemoryLayout<Wake?>.size), NotificationQueue \(MemoryLayout<NotificationQueue>.size), "
            + "Termination? \(MemoryLayout<Termination?>.size), Decision? \(MemoryLayout<Decision?>.size), "
            + "DeviceRecord \(MemoryLayout<DeviceRecord>.size), AppScenes \(MemoryLayout<AppScenes>.size)")
    }

    @Test(.enabled(if: MemoryProbeTests.enabled)) func coreAtBenchScale() {
        func used() -> Int { Self.anonymousBytes() }
        func mib(_ bytes: Int) -> String { "\(bytes / 1024) KiB" }
        print("stride: AppRecord \(MemoryLayout<AppRecord>.stride) B, AssertionRecord \(MemoryLayout<AssertionRecord>.stride) B, "
            + "AppManifest \(MemoryLayout<AppManifest>.stride) B, DaemonCore \(MemoryLayout<DaemonCore>.stride) B, "
            + "CoreInput \(MemoryLayout<CoreInput>.stride) B, CoreAction \(MemoryLayout<CoreAction>.stride) B")
        let apps = (0..<10_000).compactMap { AppID("org.bench.S" + String(100_000 + $0).dropFirst()) }
        var core = DaemonCore(lifecycle: .default, journal: JournalBudget.Limits(), denial: DenialBudget.Limits())
        var request: UInt64 = 0
        func feed(_ input: Input, _ now: Instant = .zero) {
            request += 1
            _ = core.handle(.lifecycle(input, request: RequestID(request), from: nil), now: now, wall: RealtimeInstant(microsecondsSinceEpoch: 1_700_000_000_000_000))
        }
        var last = used()
        func step(_ what: String) {
            let now = used()
            print("\(what): +\(mib(now - last)) (in use \(mib(now)))")
            last = now
        }
        feed(.appsRegistered(apps.map { AppManifest(id: $0, lifecycleAware: false) }))
        step("10,000 apps registered")
        for (n, app) in apps.enumerated() {
            feed(.launchRequested(app, background: true, exclusive: false))
            feed(.appLaunched(app, pid: Int32(10_000 + n)))
            feed(.foregroundRequested(app, exclusive: false))
        }
        step("launched into the foreground")
        for a in 0..<100_000 {
            feed(.assertionRequested(apps[a / 10], connection: ConnectionID(UInt64(1_000_000 + a % 16)), name: "bench"))
        }
        step("100,000 assertions")
        print("capacities: records \(core.lifecycle.records.capacity), slots \(core.lifecycle.slots.capacity)")
        let copy = core
        feed(.assertionRequested(apps[0], connection: ConnectionID(1_000_000), name: "bench"))
        step("a checkpoint's copy diverged by one input")
        _ = copy
    }

    /// The energy accounts of 10,000 apps, each woken once (bench row 4: launched into the background):
    /// the anonymous memory they take (run alone). Inline wake counters and a short array of hours: ~1.6 MiB
    /// (a dictionary per figure and per account's hours: ~3.6 MiB).
    @Test(.enabled(if: MemoryProbeTests.enabled)) func energyAccounts() {
        let apps = (0..<10_000).compactMap { AppID("org.bench.S" + String(100_000 + $0).dropFirst()) }
        let before = Self.anonymousBytes()
        var ledger = EnergyLedger()
        let now = RealtimeInstant(microsecondsSinceEpoch: 1_700_000_000_000_000)
        for app in apps {
            let d = Decision(kind: .launch, reason: .userRequest, app: app, state: .background, previousState: .notRunning,
                             detail: .note("launched"))
            if let m = ledger.observe(d, at: now) { ledger.measured(app, m, usage: 1_000, at: now) }
        }
        let used = Self.anonymousBytes() - before
        print("energy accounts of 10,000 apps: \(used / 1024) KiB (\(used / apps.count) bytes per app)")
        #expect(ledger.energy(of: apps[0], at: now).total.wakes == [.user: 1])
    }

    /// The process's `RssAnon`.
    static func anonymousBytes() -> Int {
        guard let f = fopen("/proc/self/status", "r") else { return 0 }
        defer { fclose(f) }
        var line = [CChar](repeating: 0, count: 256)
        while fgets(&line, 256, f) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if text.hasPrefix("RssAnon:") { return (Int(text.split(separator: " ")[1]) ?? 0) * 1024 }
        }
        return 0
    }
}
