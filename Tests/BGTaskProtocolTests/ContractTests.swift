import BGTaskModel
import Testing
@testable import BGTaskProtocol

/// issue 13: the typed wire contract agrees with the interface descriptions the daemon publishes, method
/// by method, field by field, error by error.
@Suite struct ContractTests {
    static func signature(_ d: String) throws -> VarlinkInterfaceSignature { try VarlinkInterfaceSignature(parsing: d) }

    static func check<M: WireMethod & CaseIterable & RawRepresentable<String>>(_: M.Type, _ description: String) throws {
        let s = try signature(description)
        // Every method of the IDL has its case, and every case its method.
        #expect(Set(s.methods.keys) == Set(M.allCases.map(\.rawValue)), "\(s.name)")
        for m in M.allCases {
            #expect(m.qualifiedName == s.name + "." + m.rawValue)
            let inputs = s.methods[m.rawValue]?.map(\.name)
            let outputs = s.outputs[m.rawValue]?.map(\.name)
            #expect(inputs == m.parametersType.fields, "\(m.qualifiedName) parameters")
            #expect(outputs == m.replyType.fields, "\(m.qualifiedName) reply")
            // A parameter the IDL requires (a scalar, not optional) is required by the struct too, and
            // an optional one is not.
            for field in s.methods[m.rawValue] ?? [] {
                var without = Self.sample(m.rawValue, s.methods[m.rawValue] ?? [])
                without[field.name] = nil
                let decoded = Result { () throws(WireFieldError) in try m.parametersType.init(json: without) }
                switch field.type {
                case .optional, .array, .map, .object: #expect((try? decoded.get()) != nil, "\(m.qualifiedName) \(field.name)")
                default: #expect((try? decoded.get()) == nil, "\(m.qualifiedName) \(field.name) is required")
                }
            }
        }
    }

    /// Valid parameters for a method: every field set to a value its type accepts.
    static func sample(_ method: String, _ fields: [VarlinkField]) -> [String: JSON] {
        var o: [String: JSON] = [:]
        for f in fields { o[f.name] = method == "SetGlobalRefresh" ? "off" : value(f.name, f.type) }
        return o
    }

    static func value(_ name: String, _ type: VarlinkType) -> JSON {
        switch type {
        case .optional(let t): return value(name, t)
        case .bool: return true
        case .int: return 7
        case .float: return 1.5
        case .object: return ["k": 1]
        case .array: return []
        case .map: return [:]
        case .structure, .named, .enumeration: return [:]
        case .string:
            // Strings with a closed set of values in the contract (enums of BGTaskModel).
            switch name {
            case "mode": return "audio"
            case "kind": return "refresh"
            case "reason": return "compositor-focus"
            case "network": return "metered"
            case "state": return "background"
            default: return "org.example.App"
            }
        }
    }

    @Test func everyMethodOfTheIDLHasItsCaseAndStructs() throws {
        try Self.check(AppMethod.self, Interfaces.app)
        try Self.check(ManagerMethod.self, Interfaces.manager)
        try Self.check(ServiceMethod.self, Interfaces.service)
    }

    @Test func setGlobalRefreshNeedsAKnownMode() throws {
        // Its mode is a plain string in the IDL: the struct is what refuses an unknown one.
        #expect(throws: WireFieldError("mode")) { try ManagerWire.SetGlobalRefresh(json: ["mode": "sometimes"]) }
    }

    @Test func everyTypeOfTheIDLHasItsStruct() throws {
        let app = try Self.signature(Interfaces.app)
        let manager = try Self.signature(Interfaces.manager)
        func names(_ t: VarlinkType?) -> [String]? {
            guard case .structure(let f)? = t else { return nil }
            return f.map(\.name)
        }
        #expect(names(app.types["Event"]) == AppWire.Event.fields)
        #expect(names(app.types["TaskRequest"]) == AppWire.TaskRequest.fields)
        #expect(names(manager.types["Assertion"]) == ManagerWire.Assertion.fields)
        #expect(names(manager.types["Activity"]) == ManagerWire.Activity.fields)
        #expect(names(manager.types["Decision"]) == ManagerWire.Decision.fields)
        #expect(names(manager.types["AppInfo"]) == ManagerWire.AppInfo.fields)
        #expect(names(manager.types["Settings"]) == ManagerWire.Settings.fields)
        #expect(names(manager.types["DaemonStats"]) == ManagerWire.DaemonStats.fields)
        #expect(Set(app.types.keys) == ["Event", "TaskRequest"])
        #expect(names(manager.types["AppEnergy"]) == ManagerWire.AppEnergy.fields)
        #expect(names(manager.types["ContinuedTask"]) == ManagerWire.ContinuedTask.fields)
        #expect(Set(manager.types.keys) == ["Assertion", "Activity", "Decision", "AppInfo", "Settings", "DaemonStats", "Scene", "AppEnergy", "ContinuedTask"])
    }

    /// issue 11: the counters of what the journal budget and the connection limits did are optional on the wire,
    /// so that a client of an older daemon (which sends none of them) still decodes its Stats.
    @Test func statsCountersAddedLaterAreOptional() throws {
        let manager = try Self.signature(Interfaces.manager)
        guard case .structure(let fields)? = manager.types["DaemonStats"] else {
            Issue.record("no DaemonStats in the IDL")
            return
        }
        let added = ["journalCoalesced", "journalSummaries", "connectionsRefused", "connectionsTimedOut", "connectionsOversized",
                     "connectionsPaused"]
        for name in added {
            #expect(fields.first { $0.name == name }?.type == .optional(.int), "\(name)")
        }
        let older: [String: JSON] = [
            "uptimeUSec": 1, "apps": 2, "connections": 3, "calls": 4, "decisions": 5, "liveAssertions": 6,
            "journalEntries": 7, "journalDropped": 8,
        ]
        let stats = try ManagerWire.DaemonStats(json: older)
        #expect(stats.journalCoalesced == nil && stats.journalSummaries == nil && stats.connectionsRefused == nil)
        #expect(stats.connectionsTimedOut == nil && stats.connectionsOversized == nil && stats.connectionsPaused == nil)
        #expect(Set(stats.json.keys) == Set(older.keys))
    }

    @Test func everyErrorOfTheIDLHasItsCase() throws {
        func declared(_ d: String) throws -> [String: [String]] {
            try Self.signature(d).errors.mapValues { $0.map(\.name) }
        }
        #expect(try declared(Interfaces.app) == AppError.declared)
        #expect(try declared(Interfaces.manager) == ManagerError.declared)
        #expect(try declared(Interfaces.service) == ServiceWire.declaredErrors)
    }
}
