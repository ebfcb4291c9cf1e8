import BGTaskCore
import Testing
@testable import BGTaskDaemon

/// The history's reused room for splitting messages: the records are those of a fresh split every time.
@Suite struct DecisionHistoryScratchTests {
    @Test func aReusedScratchKeepsTheSameRecords() {
        let app = AppID("org.example.Mail")!
        var fresh = DecisionHistory()
        var reused = DecisionHistory()
        var scratch = DecisionHistory.Scratch()
        let messages = [
            "granted background task 17 (sync) to org.example.Mail", "ended background task 17 of org.example.Mail",
            "a longer message 1 2 3 4 5 6 7 8 9 10 11 12 about org.example.Mail and 007", "", "x",
            "granted background task 18 to org.example.Mail",
        ]
        for (n, message) in (messages + messages.reversed()).enumerated() {
            fresh.append(realtimeUSec: Int64(n), kind: .grant, reason: .appRequest, message: message, app: app, limit: 8)
            reused.append(
                realtimeUSec: Int64(n), kind: .grant, reason: .appRequest, message: message, app: app, limit: 8,
                scratch: &scratch)
        }
        #expect(reused.records(app: app).map(\.message) == fresh.records(app: app).map(\.message))
        #expect(reused.records(app: app).map(\.message) == Array((messages + messages.reversed()).suffix(8)))
        // The same growth: an array's capacity is what malloc gave, which a chunk reused from the free lists
        // can exceed by up to 31 bytes (a remainder too small to split off), depending on the heap's state.
        #expect(abs(reused.capacity - fresh.capacity) < 32, "\(reused.capacity) against \(fresh.capacity)")
    }
}
