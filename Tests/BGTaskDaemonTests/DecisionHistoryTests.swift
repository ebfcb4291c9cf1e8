import BGTaskCore
import Testing
@testable import BGTaskDaemon

/// The packed per-app decision history behind `Explain` and `lastDecision`: what goes in comes out.
@Suite struct DecisionHistoryTests {
    let app = AppID("org.example.Mail")!

    @Test func keepsTheNewestRecordsInOrder() {
        var h = DecisionHistory()
        #expect(h.last(app: app) == nil)
        for n in 0..<40 {
            h.append(
                realtimeUSec: 1_700_000_000_000_000 + Int64(n), kind: n % 2 == 0 ? .grant : .end,
                reason: n % 3 == 0 ? .appRequest : .clientDisconnected, message: "message \(n) about \(app)",
                app: app, limit: 32)
        }
        let records = h.records(app: app)
        #expect(h.count == 32)
        #expect(records.count == 32)
        #expect(records.map(\.message) == (8..<40).map { "message \($0) about \(app)" })
        #expect(records.map(\.realtimeUSec) == (8..<40).map { 1_700_000_000_000_000 + Int64($0) })
        #expect(records.first?.kind == .grant && records.first?.reason == .clientDisconnected)
        #expect(records.allSatisfy { $0.app == app })
        #expect(h.last(app: app)?.message == "message 39 about \(app)")
        #expect(h.last(app: app)?.kind == .end)
    }

    @Test(arguments: [
        "", "org.example.Mail", "org.example.Mail org.example.Mail", "org.example.Mai", "org.example.Mailbox",
        "ctl \u{1} and \u{2} bytes \u{2}\u{1}", "é ✓ 🎉 org.example.Mail\u{1}", "\u{2}",
    ])
    func messagesRoundTrip(message: String) {
        var h = DecisionHistory()
        h.append(realtimeUSec: -5, kind: .deny, reason: .tooManyAssertions, message: message, app: app, limit: 32)
        #expect(h.last(app: app)?.message == message)
        #expect(h.last(app: app)?.realtimeUSec == -5)
    }

    @Test func everyKindAndReasonRoundTrips() {
        var h = DecisionHistory()
        let limit = max(DecisionKind.allCases.count, Reason.allCases.count)
        for (n, reason) in Reason.allCases.enumerated() {
            let kind = DecisionKind.allCases[n % DecisionKind.allCases.count]
            h.append(realtimeUSec: Int64(n), kind: kind, reason: reason, message: "\(n)", app: app, limit: limit)
        }
        let records = h.records(app: app)
        #expect(records.map(\.reason) == Reason.allCases)
        #expect(records.enumerated().allSatisfy { $1.kind == DecisionKind.allCases[$0 % DecisionKind.allCases.count] })
    }

    @Test func longMessagesAreKeptWhole() {
        var h = DecisionHistory()
        let long = String(repeating: "x", count: 70_000) + " \(app)"
        h.append(realtimeUSec: 1, kind: .grant, reason: .appRequest, message: long, app: app, limit: 2)
        h.append(realtimeUSec: 2, kind: .end, reason: .appRequest, message: "short", app: app, limit: 2)
        h.append(realtimeUSec: 3, kind: .end, reason: .appRequest, message: "shorter", app: app, limit: 2)
        #expect(h.records(app: app).map(\.message) == ["short", "shorter"])
        var g = DecisionHistory()
        g.append(realtimeUSec: 1, kind: .grant, reason: .appRequest, message: long, app: app, limit: 2)
        #expect(g.last(app: app)?.message == long)
    }
}

/// What a history costs: bench row 4's 13 records per app (a launch, a foreground, ten grants) in a
/// few hundred bytes, not ~870 (each message's whole text).
@Suite struct DecisionHistorySizeTests {
    @Test func thirteenRecordsOfAnAppCostUnderTwoHundredBytes() {
        let app = AppID("org.bench.S00003")!
        var h = DecisionHistory()
        let stamp: Int64 = 1_795_711_000_847_130
        h.append(realtimeUSec: stamp, kind: .launch, reason: .userRequest,
                 message: "launching \(app) into the background (user)", app: app, limit: 32)
        h.append(realtimeUSec: stamp + 7_911, kind: .launch, reason: .userRequest,
                 message: "\(app) (pid 27909) launched into the background (user)", app: app, limit: 32)
        h.append(realtimeUSec: stamp + 8_049, kind: .foreground, reason: .userRequest,
                 message: "\(app) came to the foreground", app: app, limit: 32)
        for n in 0..<10 {
            h.append(realtimeUSec: stamp + 439_809 + Int64(n) * 100, kind: .grant, reason: .appRequest,
                     message: "granted background task \(3 + 13 * n) (bench) to \(app)", app: app, limit: 32)
        }
        #expect(h.records(app: app).map(\.message).last == "granted background task 120 (bench) to \(app)")
        #expect(h.capacity <= 200, "a history of 13 records holds \(h.capacity) bytes")
    }

    @Test(arguments: [
        "0", "007", "pid 0 and 10", "18446744073709551615", "123456789012345678", "1234567890123456789",
        "\u{3}9\u{3}", "9org.example.Mail9", "task 42 (name 7) at 1.5 s",
    ])
    func numbersRoundTrip(message: String) {
        let app = AppID("org.example.Mail")!
        var h = DecisionHistory()
        h.append(realtimeUSec: .min, kind: .grant, reason: .appRequest, message: message, app: app, limit: 2)
        h.append(realtimeUSec: .max, kind: .end, reason: .appRequest, message: message + " again", app: app, limit: 2)
        #expect(h.records(app: app).map(\.message) == [message, message + " again"])
        #expect(h.records(app: app).map(\.realtimeUSec) == [.min, .max])
    }
}
