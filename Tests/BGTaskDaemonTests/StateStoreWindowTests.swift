import BGTaskCore
import BGTaskProtocol
import Dispatch
import Foundation
import Synchronization
import Testing
@testable import BGTaskDaemon

private let app = AppID("org.example.Window")!

/// refresh.json's saves that no call waits for (an app's last use, its wakes: one per state change in a
/// burst, `make bench` row 3) are written within `StateStore.saveWindow`, together; the daemon's exit
/// writes what is still waiting.
@Suite struct StateStoreWindowTests {
    private func directory() -> String {
        let path = NSTemporaryDirectory() + "bgtaskd-window-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    private func onDisk(_ store: StateStore) -> RefreshState? {
        StateStore.readAll(store.path).flatMap { try? JSON.parse($0) }.flatMap(RefreshState.decode)?.state
    }

    @Test func aBurstOfSavesNoCallWaitsForIsOneWriteAndEachIsDurableBeforeItsCompletion() throws {
        let dir = directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let queue = DispatchQueue(label: "test.window")
        let store = StateStore(directory: dir, queue: queue)
        let done = DispatchSemaphore(value: 0)
        let seen = Mutex<[Int64]>([])
        var state = RefreshState()
        queue.sync {
            for i in 1...50 {
                state.energy.lastUsed[app] = RealtimeInstant(microsecondsSinceEpoch: Int64(i))
                store.save(state, soon: false) { error in
                    let used = error == nil ? onDisk(store)?.energy.lastUsed[app]?.microsecondsSinceEpoch ?? -1 : -1
                    seen.withLock { $0.append(used) }
                    if i == 50 { done.signal() }
                }
            }
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(seen.withLock { $0 } == Array(repeating: 50, count: 50))
        #expect(queue.sync { store.writes } == 1)
    }

    /// A save keeps no copy of the state, only where to read it: the write takes the state as it is when
    /// the write starts (a copy kept per save made the core's next change copy its tables: O(apps) per launch).
    @Test func aSaveReadsTheStateWhenItsWriteStarts() throws {
        let dir = directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let queue = DispatchQueue(label: "test.window")
        let store = StateStore(directory: dir, queue: queue)
        final class Box: @unchecked Sendable { var state = RefreshState() }  // used on `queue` only
        let box = Box()
        let done = DispatchSemaphore(value: 0)
        let reads = Mutex(0)
        queue.sync {
            box.state.energy.lastUsed[app] = RealtimeInstant(microsecondsSinceEpoch: 1)
            store.save(reading: { reads.withLock { $0 += 1 }; return box.state }, soon: false) { _ in done.signal() }
            // Changed after the save, before its window ends (the window's timer runs on this queue, later).
            box.state.energy.lastUsed[app] = RealtimeInstant(microsecondsSinceEpoch: 2)
            #expect(reads.withLock { $0 } == 0, "read at the save, not when its write starts")
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(onDisk(store)?.energy.lastUsed[app]?.microsecondsSinceEpoch == 2)
        #expect(reads.withLock { $0 } == 1)
    }

    @Test func aSaveACallWaitsForIsWrittenWithTheWaitingOnes() throws {
        let dir = directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let queue = DispatchQueue(label: "test.window")
        let store = StateStore(directory: dir, queue: queue)
        let done = DispatchSemaphore(value: 0)
        var state = RefreshState()
        queue.sync {
            state.energy.lastUsed[app] = RealtimeInstant(microsecondsSinceEpoch: 7)
            store.save(state, soon: false)
            state.lowPowerMode = true
            store.save(state) { _ in done.signal() }
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        let saved = try #require(onDisk(store))
        #expect(saved.lowPowerMode && saved.energy.lastUsed[app]?.microsecondsSinceEpoch == 7)
        #expect(queue.sync { store.writes } == 1)
    }

    @Test func theExitWritesWhatIsStillWaiting() throws {
        let dir = directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let queue = DispatchQueue(label: "test.window")
        let store = StateStore(directory: dir, queue: queue)
        var state = RefreshState()
        state.energy.lastUsed[app] = RealtimeInstant(microsecondsSinceEpoch: 9)
        let error = queue.sync {
            store.save(state, soon: false)
            return store.flush()
        }
        #expect(error == nil)
        #expect(onDisk(store)?.energy.lastUsed[app]?.microsecondsSinceEpoch == 9)
    }
}
