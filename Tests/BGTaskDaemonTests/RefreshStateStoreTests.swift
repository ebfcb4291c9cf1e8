import BGTaskCore
import BGTaskProtocol
import Dispatch
import Foundation
import Testing
@testable import BGTaskDaemon

private let appA = AppID("org.example.StoreA")!
private let appB = AppID("org.example.StoreB")!

private func temporaryDirectory() -> String {
    let path = NSTemporaryDirectory() + "bgtaskd-store-" + UUID().uuidString
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

private func sampleState() -> RefreshState {
    var s = RefreshState()
    s.mode = .unmetered
    s.lowPowerMode = true
    s.onExternalPower = false
    s.network = .metered
    s.appSettings = [appA: false, appB: true]
    let permissions = TaskSubmitPermissions(permittedIdentifiers: ["r", "p1", "p2"], backgroundModes: [.fetch, .processing])
    s.schedule.submit(
        TaskRequest(identifier: "r", kind: .refresh, earliestBegin: RealtimeInstant(microsecondsSinceEpoch: 1_700_000_000_123_456)),
        for: appA, permissions: permissions)
    s.schedule.submit(TaskRequest(identifier: "p2", kind: .processing, requiresNetwork: true), for: appA, permissions: permissions)
    s.schedule.submit(TaskRequest(identifier: "p1", kind: .processing, requiresExternalPower: true), for: appA, permissions: permissions)
    s.schedule.setLastRefresh(RealtimeInstant(microsecondsSinceEpoch: 1_699_999_999_000_000), for: appB)
    return s
}

/// The refresh state file: its format, and the write protocol that makes it crash-safe.
@Suite struct RefreshStateStoreTests {
    @Test func theStateRoundTripsThroughItsJSON() throws {
        let state = sampleState()
        let text = String(decoding: state.bytes(), as: UTF8.self)
        let decoded = try #require(RefreshState.decode(try JSON.parse(text)))
        #expect(decoded.warnings.isEmpty)
        #expect(decoded.state == state)
        // Submission order is kept.
        #expect(decoded.state.schedule.requests(for: appA).map(\.identifier) == ["r", "p2", "p1"])
        // Equal states give equal bytes.
        #expect(String(decoding: decoded.state.bytes(), as: UTF8.self) == text)
    }

    @Test func anEmptyStateIsSmallAndLoadsAsTheDefaults() throws {
        let text = String(decoding: RefreshState().bytes(), as: UTF8.self)
        #expect(text == #"{"apps":{},"lowPowerMode":false,"version":1}"# + "\n")
        #expect(try RefreshState.decode(JSON.parse("{}"))?.state == RefreshState())
    }

    @Test func entriesThatMakeNoSenseAreSkippedNotFatal() throws {
        let text = """
            {"version": 1, "backgroundAppRefresh": "sometimes", "lowPowerMode": true,
             "conditions": {"network": "5g"},
             "apps": {"not an id!": {"refresh": false},
                      "org.example.StoreA": {"refresh": false, "requests": [{"identifier": "r", "kind": "nightly"},
                                              {"identifier": "ok", "kind": "refresh"}, {"identifier": "ok2", "kind": "refresh"}]}}}
            """
        let decoded = try #require(RefreshState.decode(try JSON.parse(text)))
        #expect(decoded.state.lowPowerMode)
        #expect(decoded.state.mode == nil)
        #expect(decoded.state.network == nil)
        #expect(decoded.state.appSettings == [appA: false])
        #expect(decoded.state.schedule.requests(for: appA).map(\.identifier) == ["ok"])
        #expect(decoded.warnings.count == 5)
        #expect(try RefreshState.decode(JSON.parse("[1, 2]")) == nil)
    }

    @Test func writeAtomicallyReplacesTheFileAndLeavesNoTemporary() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/state.json", tmp = dir + "/.state.json.tmp"
        #expect(StateStore.writeAtomically(Array("one".utf8), path: path, temporaryPath: tmp, directory: dir) == nil)
        #expect(StateStore.writeAtomically(Array("two".utf8), path: path, temporaryPath: tmp, directory: dir) == nil)
        #expect(StateStore.readAll(path) == Array("two".utf8))
        #expect(!FileManager.default.fileExists(atPath: tmp))
        // A directory that does not exist: an error, no crash.
        let missing = dir + "/missing"
        let error = StateStore.writeAtomically(Array("x".utf8), path: missing + "/f", temporaryPath: missing + "/.f.tmp", directory: missing)
        #expect(error?.contains("cannot create") == true)
    }

    @Test func savesAreDurableBeforeTheirCompletionAndLoadBack() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let queue = DispatchQueue(label: "test.state")
        let store = StateStore(directory: dir, queue: queue)
        var state = RefreshState()
        let done = DispatchSemaphore(value: 0)
        let results = ResultBox()
        queue.sync {
            // A burst: each completion sees a file holding at least its own change.
            for i in 0..<20 {
                state.lowPowerMode = i % 2 == 0
                state.appSettings[appA] = i % 3 == 0
                let expected = state
                store.save(state) { error in
                    let onDisk = StateStore.readAll(store.path).flatMap { try? JSON.parse($0) }.flatMap(RefreshState.decode)
                    results.append(error == nil && onDisk != nil, last: i == 19 ? onDisk?.state == expected : nil)
                    if i == 19 { done.signal() }
                }
            }
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(results.allOK)
        #expect(results.lastMatches == true)
        // Group commit: fewer writes than saves.
        let writes = queue.sync { store.writes }
        #expect(writes >= 1 && writes < 20)
        // A fresh store loads the last state.
        let reloaded = StateStore(directory: dir, queue: queue).load()
        #expect(reloaded.warnings.isEmpty)
        #expect(reloaded.state == state)
    }

    /// issue 11, point 4: saves made from completions (a client answered, its next call saved at once, as
    /// the server does) while other saves wait: completions run in save order, and each sees a file with
    /// its own change or a newer one, never an older one.
    @Test func savesFromCompletionsStayInOrderAndDurable() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let queue = DispatchQueue(label: "test.state")
        let store = StateStore(directory: dir, queue: queue)
        let done = DispatchSemaphore(value: 0)
        let log = OrderBox()
        let total = 300
        @Sendable func marker(_ i: Int) -> RefreshState {
            var s = RefreshState()
            s.schedule.setLastRefresh(RealtimeInstant(microsecondsSinceEpoch: Int64(i)), for: appB)
            return s
        }
        @Sendable func save(_ i: Int) {
            store.save(marker(i)) { error in
                let onDisk = StateStore.readAll(store.path).flatMap { try? JSON.parse($0) }.flatMap(RefreshState.decode)
                let seen = onDisk?.state.schedule.lastRefresh[appB]?.microsecondsSinceEpoch ?? -1
                log.append(i, ok: error == nil && seen >= Int64(i))
                // Three "clients": each saves its next change from its completion, two of them at once.
                if i + 3 < total { save(i + 3) }
                if i + 3 >= total && i + 1 == total { done.signal() }
            }
        }
        queue.sync { for i in 0..<3 { save(i) } }
        #expect(done.wait(timeout: .now() + 30) == .success)
        let (order, allOK) = log.result
        #expect(allOK)
        #expect(order == Array(0..<total))
        #expect(queue.sync { store.durableVersion } == UInt64(total))
    }

    @Test func anUnreadableFileIsSetAsideAndALeftoverTemporaryRemoved() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = StateStore(directory: dir, queue: DispatchQueue(label: "test.state"))
        #expect(store.load().state == RefreshState())  // no file: a fresh start
        try Data("{\"lowPowerMode\": tr".utf8).write(to: URL(fileURLWithPath: store.path))
        try Data("half".utf8).write(to: URL(fileURLWithPath: store.temporaryPath))
        let loaded = store.load()
        #expect(loaded.state == RefreshState())
        #expect(loaded.warnings.count == 1)
        #expect(FileManager.default.fileExists(atPath: store.path + ".corrupt"))
        #expect(!FileManager.default.fileExists(atPath: store.temporaryPath))
    }

    @Test func powerSuppliesAreReadFromSysfsLayout() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(PowerSupplyMonitor.read(dir + "/none").isEmpty)
        let fm = FileManager.default
        for (name, files) in [("AC", ["type": "Mains\n", "online": "0\n"]), ("BAT0", ["type": "Battery\n", "status": "Discharging\n"])] {
            try fm.createDirectory(atPath: dir + "/" + name, withIntermediateDirectories: true)
            for (file, text) in files { try Data(text.utf8).write(to: URL(fileURLWithPath: dir + "/\(name)/\(file)")) }
        }
        let readings = PowerSupplyMonitor.read(dir)
        #expect(readings.map(\.type) == ["Mains\n", "Battery\n"])
        #expect(PowerSupplyReading.onExternalPower(readings) == false)
        try Data("1\n".utf8).write(to: URL(fileURLWithPath: dir + "/AC/online"))
        #expect(PowerSupplyReading.onExternalPower(PowerSupplyMonitor.read(dir)) == true)
    }

    @Test func theMonitorReportsChangesOnlyOnce() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/AC", withIntermediateDirectories: true)
        try Data("Mains\n".utf8).write(to: URL(fileURLWithPath: dir + "/AC/type"))
        try Data("0\n".utf8).write(to: URL(fileURLWithPath: dir + "/AC/online"))
        let queue = DispatchQueue(label: "test.power")
        let seen = PowerBox()
        let monitor = PowerSupplyMonitor(path: dir, queue: queue) { seen.add($0) }
        let initial = queue.sync { monitor.start() }
        #expect(initial == false)
        #expect(queue.sync { monitor.mode } != "none")
        queue.sync { monitor.check() }
        #expect(seen.values.isEmpty)
        try Data("1\n".utf8).write(to: URL(fileURLWithPath: dir + "/AC/online"))
        queue.sync {
            monitor.check()
            monitor.check()
        }
        #expect(seen.values == [true])
        queue.sync { monitor.stop() }
        // Nothing to follow without supplies.
        let none = PowerSupplyMonitor(path: dir + "/none", queue: queue) { _ in }
        #expect(queue.sync { none.start() } == nil)
        #expect(queue.sync { none.mode } == "none")
    }
}

/// Collects results from completions that run on another queue.
private final class ResultBox: @unchecked Sendable {
    private let lock = NSLock()
    private var oks: [Bool] = []
    private var last: Bool?

    func append(_ ok: Bool, last matches: Bool?) {
        lock.lock()
        defer { lock.unlock() }
        oks.append(ok)
        if let matches { last = matches }
    }

    var allOK: Bool {
        lock.lock()
        defer { lock.unlock() }
        return oks.count == 20 && oks.allSatisfy { $0 }
    }

    var lastMatches: Bool? {
        lock.lock()
        defer { lock.unlock() }
        return last
    }
}

/// Collects what a power monitor reported.
private final class PowerBox: @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [Bool] = []

    func add(_ value: Bool) {
        lock.lock()
        defer { lock.unlock() }
        seen.append(value)
    }

    var values: [Bool] {
        lock.lock()
        defer { lock.unlock() }
        return seen
    }
}

/// Completion order and results, from another queue.
private final class OrderBox: @unchecked Sendable {
    private let lock = NSLock()
    private var order: [Int] = []
    private var ok = true

    func append(_ i: Int, ok good: Bool) {
        lock.lock()
        defer { lock.unlock() }
        order.append(i)
        ok = ok && good
    }

    var result: ([Int], Bool) {
        lock.lock()
        defer { lock.unlock() }
        return (order, ok)
    }
}
