import BGTaskCore
import BGTaskProtocol
import Dispatch
import Foundation
import Testing
@testable import BGTaskDaemon

private let mail = AppID("org.example.Mail")!

/// SPEC §16's persisted parts: the energy accounts (energy.json) and, in refresh.json, closed-by-user, last
/// use and recent wakes.
@Suite struct EnergyStoreTests {
    @Test func theEnergyAccountsRoundTripThroughTheirFile() throws {
        let dir = NSTemporaryDirectory() + "bgtaskd-energy-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let queue = DispatchQueue(label: "test")
        let accounts: [AppID: EnergyAccount] = [
            mail: EnergyAccount(
                total: EnergyFigures(backgroundCPUUSec: 1_500_000, wakes: [.task: 3, .busCall: 1]),
                hours: [500_000: EnergyFigures(backgroundCPUUSec: 700, wakes: [.user: 1])]),
        ]
        let store = EnergyStore(directory: dir, queue: queue)
        queue.sync { store.save(accounts) { error in Issue.record("\(error)") } }
        // Written off the queue: wait for the writer's file (a bounded wait on a file, no notification).
        let deadline = Date().addingTimeInterval(5)
        while queue.sync(execute: { store.writes }) == 0, Date() < deadline { usleep(1000) }
        let (loaded, warnings) = EnergyStore(directory: dir, queue: queue).load()
        #expect(warnings.isEmpty && loaded == accounts)
    }

    /// Every app's account is in each write: the wait before the next one is 20 times a write's own time
    /// when that is longer than 100 ms, so the writer takes at most a twentieth of a CPU.
    @Test func theSaveWindowGrowsWithTheCostOfAWrite() {
        #expect(EnergyStore.window(afterWriteNS: 0) == 100_000_000)
        #expect(EnergyStore.window(afterWriteNS: 2_000_000) == 100_000_000)
        #expect(EnergyStore.window(afterWriteNS: 25_000_000) == 500_000_000)
        for ns: Int64 in [1_000_000, 5_000_000, 25_000_000, 400_000_000] {
            #expect(ns * EnergyStore.writeShare <= EnergyStore.window(afterWriteNS: ns))
        }
    }

    @Test func aFileThatCannotBeReadIsSetAside() throws {
        let dir = NSTemporaryDirectory() + "bgtaskd-energy-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "not json".write(toFile: dir + "/energy.json", atomically: true, encoding: .utf8)
        let (loaded, warnings) = EnergyStore(directory: dir, queue: DispatchQueue(label: "test")).load()
        #expect(loaded.isEmpty && warnings.count == 1)
        #expect(FileManager.default.fileExists(atPath: dir + "/energy.json.corrupt"))
    }

    @Test func closedLastUsedAndWakesRoundTripThroughRefreshJSON() throws {
        var state = RefreshState()
        state.energy.closedByUser = [mail]
        state.energy.lastUsed[mail] = RealtimeInstant(microsecondsSinceEpoch: 42)
        state.energy.wakes[mail] = [RealtimeInstant(microsecondsSinceEpoch: 7), RealtimeInstant(microsecondsSinceEpoch: 9)]
        let decoded = try #require(RefreshState.decode(try JSON.parse(state.bytes())))
        #expect(decoded.warnings.isEmpty && decoded.state == state)
    }
}
