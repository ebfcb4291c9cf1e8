import BGTaskCore
import BGTaskProtocol
import Testing
@testable import BGTaskDaemon

/// The state files (refresh.json, energy.json) are written member by member (``JSONTextWriter``), with no
/// JSON tree. The reference here builds the tree and writes it (``JSON/write(into:)`` sorts every object's
/// keys): the two must give the same bytes, for states with every field and many apps.
@Suite struct StateFileBytesTests {
    /// refresh.json as a JSON tree, every object's keys sorted by the tree's writer.
    static func referenceBytes(_ s: RefreshState) -> [UInt8] {
        var root: [String: JSON] = ["version": .int(RefreshState.formatVersion), "lowPowerMode": .bool(s.lowPowerMode)]
        if let mode = s.mode { root["backgroundAppRefresh"] = .string(mode.rawValue) }
        var conditions: [String: JSON] = [:]
        if let p = s.onExternalPower { conditions["onExternalPower"] = .bool(p) }
        if let n = s.network { conditions["network"] = .string(n.rawValue) }
        if !conditions.isEmpty { root["conditions"] = .object(conditions) }
        var apps: [String: JSON] = [:]
        let ids = Set(s.appSettings.keys).union(s.schedule.pending.keys).union(s.schedule.lastRefresh.keys)
            .union(s.energy.closedByUser).union(s.energy.lastUsed.keys).union(s.energy.wakes.keys)
        for id in ids {
            var entry: [String: JSON] = [:]
            if let enabled = s.appSettings[id] { entry["refresh"] = .bool(enabled) }
            if let last = s.schedule.lastRefresh[id] { entry["lastRefreshRealtimeUSec"] = .int(last.microsecondsSinceEpoch) }
            let requests = s.schedule.requests(for: id)
            if !requests.isEmpty {
                entry["requests"] = .array(requests.map { r in
                    var o: [String: JSON] = [
                        "identifier": .string(r.identifier), "kind": .string(r.kind.rawValue),
                        "requiresNetwork": .bool(r.requiresNetwork), "requiresExternalPower": .bool(r.requiresExternalPower),
                    ]
                    if let begin = r.earliestBegin { o["earliestBeginUSec"] = .int(begin.microsecondsSinceEpoch) }
                    return .object(o)
                })
            }
            if s.energy.closedByUser.contains(id) { entry["closedByUser"] = .bool(true) }
            if let used = s.energy.lastUsed[id] { entry["lastUsedRealtimeUSec"] = .int(used.microsecondsSinceEpoch) }
            if let wakes = s.energy.wakes[id], !wakes.isEmpty {
                entry["wakesRealtimeUSec"] = .array(wakes.map { .int($0.microsecondsSinceEpoch) })
            }
            apps[id.rawValue] = .object(entry)
        }
        root["apps"] = .object(apps)
        var bytes: [UInt8] = []
        JSON.object(root).write(into: &bytes)
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    /// energy.json as a JSON tree.
    static func referenceBytes(_ accounts: [AppID: EnergyAccount]) -> [UInt8] {
        func figures(_ f: EnergyFigures) -> JSON {
            var wakes: [String: JSON] = [:]
            for (cause, n) in f.wakes { wakes[cause.rawValue] = .int(n) }
            return .object(["backgroundCPUUSec": .int(f.backgroundCPUUSec), "wakes": .object(wakes)])
        }
        var apps: [String: JSON] = [:]
        for (app, account) in accounts {
            var hours: [String: JSON] = [:]
            for (hour, f) in account.hours { hours[String(hour)] = figures(f) }
            apps[app.rawValue] = .object(["total": figures(account.total), "hours": .object(hours)])
        }
        var bytes: [UInt8] = []
        JSON.object(["version": .int(EnergyJSON.formatVersion), "apps": .object(apps)]).write(into: &bytes)
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    /// A state with `n` apps, each with a different mix of the fields (none, some, all), ids chosen so that
    /// their order as text differs from their order as numbers.
    /// Varied bits for item `i` (a multiplicative hash: the same every run, so a failure repeats).
    static func bits(_ i: Int, seed: UInt64) -> UInt64 {
        let h = (UInt64(i) &+ seed &* 1_000_003) &* 0x9E37_79B9_7F4A_7C15
        return h ^ (h >> 29)
    }

    static func state(apps n: Int, seed: UInt64) -> RefreshState {
        var s = RefreshState()
        s.mode = .unmetered
        s.lowPowerMode = true
        s.onExternalPower = false
        s.network = .unmetered
        for i in 0..<n {
            let id = AppID("org.example.app\(i)")!
            let mix = bits(i, seed: seed)
            if mix & 1 != 0 { s.appSettings[id] = mix & 2 != 0 }
            if mix & 4 != 0 { s.schedule.setLastRefresh(RealtimeInstant(microsecondsSinceEpoch: Int64(mix >> 20)), for: id) }
            if mix & 8 != 0 {
                // Identifiers with characters the writer escapes.
                let (refresh, processing) = ("refresh \"\(i)\"", "p\\\(i)")
                let permissions = TaskSubmitPermissions(
                    permittedIdentifiers: [refresh, processing], backgroundModes: [.fetch, .processing])
                s.schedule.submit(
                    TaskRequest(identifier: refresh, kind: .refresh,
                                earliestBegin: mix & 16 != 0 ? RealtimeInstant(microsecondsSinceEpoch: 1_700_000_000_000_000) : nil,
                                requiresNetwork: mix & 32 != 0, requiresExternalPower: mix & 64 != 0),
                    for: id, permissions: permissions)
                s.schedule.submit(TaskRequest(identifier: processing, kind: .processing), for: id, permissions: permissions)
            }
            if mix & 128 != 0 { s.energy.closedByUser.insert(id) }
            if mix & 256 != 0 { s.energy.lastUsed[id] = RealtimeInstant(microsecondsSinceEpoch: Int64(i)) }
            if mix & 512 != 0 {
                s.energy.wakes[id] = (0...Int(mix >> 60)).map { RealtimeInstant(microsecondsSinceEpoch: Int64($0) * 1_000_003) }
            }
        }
        return s
    }

    /// nil when equal; else where they part, with some text of each from there.
    static func difference(_ a: [UInt8], _ b: [UInt8]) -> String? {
        guard a != b else { return nil }
        let at = (0..<min(a.count, b.count)).first { a[$0] != b[$0] } ?? min(a.count, b.count)
        let text = { (x: [UInt8]) in String(decoding: x[max(0, at - 40)..<min(x.count, at + 80)], as: UTF8.self) }
        return "byte \(at) of \(a.count) / \(b.count): written …\(text(a))… reference …\(text(b))…"
    }

    @Test func refreshJSONIsTheTreesBytes() throws {
        #expect(Self.difference(RefreshState().bytes(), Self.referenceBytes(RefreshState())) == nil)
        for seed: UInt64 in 1...4 {
            let s = Self.state(apps: 500, seed: seed)
            let bytes = s.bytes()
            #expect(Self.difference(bytes, Self.referenceBytes(s)) == nil)
            // And it reads back as the same state.
            let decoded = try #require(RefreshState.decode(try JSON.parse(bytes)))
            #expect(decoded.warnings.isEmpty && decoded.state == s)
        }
        var partial = RefreshState()
        partial.network = .metered
        #expect(Self.difference(partial.bytes(), Self.referenceBytes(partial)) == nil)
    }

    @Test func energyJSONIsTheTreesBytes() throws {
        #expect(Self.difference(EnergyJSON.bytes(of: [:]), Self.referenceBytes([:])) == nil)
        var accounts: [AppID: EnergyAccount] = [:]
        for i in 0..<500 {
            let mix = Self.bits(i, seed: 7)
            var wakes: [WakeCause: Int64] = [:]
            for (k, cause) in WakeCause.allCases.enumerated() where mix >> UInt64(k) & 1 != 0 { wakes[cause] = Int64(k + i) }
            let total = EnergyFigures(backgroundCPUUSec: Int64(mix >> 40), wakes: wakes)
            var hours: [Int64: EnergyFigures] = [:]
            switch i % 4 {
            case 0: break  // no hour
            case 1: hours[493_000 + Int64(i)] = total  // one hour whose figures are the total (kept without a list)
            case 2:  // hours with as many digits: already in the keys' order
                for h in 0..<Int64(mix % 24) { hours[493_000 + h] = EnergyFigures(backgroundCPUUSec: h, wakes: [.user: h]) }
            default:  // digits differ: "10" sorts before "9"
                for h: Int64 in [7, 9, 10, 11, 99, 100] { hours[h] = EnergyFigures(backgroundCPUUSec: h) }
            }
            accounts[AppID("org.example.app\(i)")!] = EnergyAccount(total: total, hours: hours)
        }
        let bytes = EnergyJSON.bytes(of: accounts)
        #expect(Self.difference(bytes, Self.referenceBytes(accounts)) == nil)
        let decoded = try #require(EnergyJSON.decode(try JSON.parse(bytes)))
        #expect(decoded.warnings.isEmpty && decoded.accounts == accounts)
    }
}
