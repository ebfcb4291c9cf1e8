import BGTaskCore
import Testing

/// Every enum round-trips through its wire string (like logind's test-login-tables.c), and the strings are
/// exactly those of the SPEC.
@Suite struct TableTests {
    func roundTrips<E: RawRepresentable & CaseIterable & Equatable>(_: E.Type) -> Bool where E.RawValue == String {
        E.allCases.allSatisfy { E(rawValue: $0.rawValue) == $0 }
            && Set(E.allCases.map { $0.rawValue }).count == E.allCases.count
            && E.allCases.allSatisfy { isKebab($0.rawValue) }
    }

    func isKebab(_ text: String) -> Bool {
        !text.isEmpty && !text.hasPrefix("-") && !text.hasSuffix("-") && !text.contains("--")
            && text.utf8.allSatisfy { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || $0 == UInt8(ascii: "-") }
    }

    @Test func everyEnumRoundTrips() {
        #expect(roundTrips(AppState.self))
        #expect(roundTrips(LifecycleEventKind.self))
        #expect(roundTrips(DecisionKind.self))
        #expect(roundTrips(Reason.self))
        #expect(roundTrips(LaunchReason.self))
        #expect(roundTrips(BackgroundMode.self))
        #expect(roundTrips(TaskKind.self))
        #expect(roundTrips(Severity.self))
        #expect(roundTrips(CoreError.self))
        #expect(AppState(rawValue: "Active") == nil)
        #expect(Reason(rawValue: "") == nil)
    }

    @Test func wireStringsAreTheSpecs() {
        #expect(AppState.allCases.map { $0.rawValue } == ["not-running", "inactive", "active", "background", "suspended"])
        #expect(
            LifecycleEventKind.allCases.map { $0.rawValue } == [
                "did-finish-launching", "will-enter-foreground", "did-become-active", "will-resign-active",
                "did-enter-background", "background-task-will-expire", "will-terminate", "perform-task", "notification",
                "memory-warning", "scene-will-connect", "scene-will-enter-foreground", "scene-did-become-active",
                "scene-will-resign-active", "scene-did-enter-background", "scene-did-disconnect", "scene-snapshot",
            ])
        #expect(
            DecisionKind.allCases.map { $0.rawValue } == [
                "launch", "foreground", "background", "suspend", "resume", "terminate", "grant", "deny", "end", "expire",
                "run-task", "complete-task", "notify", "policy", "coalesced",
            ])
        #expect(LaunchReason.allCases.map { $0.rawValue } == ["user", "background-task", "remote-notification"])
        #expect(
            BackgroundMode.allCases.map { $0.rawValue } == [
                "audio", "location", "voip", "external-accessory", "bluetooth", "fetch", "remote-notification", "processing",
            ])
        #expect(BackgroundMode.allCases.filter { $0.isContinuous } == [.audio, .location, .voip, .externalAccessory, .bluetooth])
        #expect(TaskKind.allCases.map { $0.rawValue } == ["refresh", "processing"])
        let specReasons = [
            "no-assertions", "user-request", "budget-exhausted", "did-enter-background-timeout", "expiration-not-handled",
            "client-disconnected", "refresh-disabled", "low-power-mode", "memory-pressure", "launch-timeout",
            "too-many-assertions", "task-not-completed", "restricted", "network-metered", "app-exited", "assertion-held",
            "activity-held", "journal-budget",
        ]
        for reason in specReasons { #expect(Reason(rawValue: reason) != nil, "\(reason)") }
        // The errors' wire names: Tests/BGTaskDaemonTests/WireErrorTests.swift (the protocol names them).
    }

    @Test func appIDValidation() {
        #expect(AppID("org.example.Mail")?.rawValue == "org.example.Mail")
        #expect(AppID("a") != nil)
        #expect(AppID("A-Z_a.z-0_9") != nil)
        #expect(AppID(String(repeating: "x", count: 255)) != nil)
        #expect(AppID(String(repeating: "x", count: 256)) == nil)
        for bad in ["", "org example", "org/example", "ünï", "a;b", "a\nb", "..\u{0}"] {
            #expect(AppID(bad) == nil, "\(bad)")
        }
        #expect(AppID("b")! > AppID("a")!)
    }

    @Test func timeArithmeticSaturates() {
        #expect(Instant(microseconds: .max) + .seconds(1) == Instant(microseconds: .max))
        #expect(Instant(microseconds: .min) - .seconds(1) == Instant(microseconds: .min))
        #expect(TimeSpan.seconds(.max) == TimeSpan(microseconds: .max))
        #expect(Instant(microseconds: 5_000_000) - Instant.zero == .seconds(5))
        #expect(TimeSpan.seconds(5).description == "5s")
        #expect(TimeSpan.milliseconds(1500).description == "1.5s")
        #expect(TimeSpan.milliseconds(250).description == "250ms")
        #expect(TimeSpan.minutes(5) == .seconds(300))
        #expect(RealtimeInstant(microsecondsSinceEpoch: 1) + .microseconds(1) == RealtimeInstant(microsecondsSinceEpoch: 2))
    }

    @Test func defaultsAreTheSpecs() {
        let c = LifecycleConfig.default
        #expect(c.didEnterBackgroundTimeout == .seconds(5))
        #expect(c.backgroundTimeBudget == .seconds(30))
        #expect(c.expirationWarning == .seconds(5))
        #expect(c.maxBackgroundTasksPerApp == 64)
        #expect(c.launchTimeout == .seconds(20))
        #expect(c.willTerminateTimeout == .seconds(5))
        #expect(c.killTimeout == .seconds(5))
        #expect(c.refreshTaskBudget == .seconds(30))
        #expect(c.processingTaskBudget == .minutes(5))
        #expect(c.maxQueuedNotificationsPerApp == 64)
    }
}
