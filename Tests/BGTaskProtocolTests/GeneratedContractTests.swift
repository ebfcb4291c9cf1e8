import BGTaskModel
import Foundation
import Testing
@testable import BGTaskProtocol

/// The wire is declared once, in varlink/*.varlink: what scripts/gen-varlink.py generates from them agrees
/// with them (`make test` also runs `scripts/gen-varlink.py --check`: the generated files are up to date).
@Suite struct GeneratedContractTests {
    static let varlinkDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("varlink")

    @Test func thePublishedTextsAreTheVarlinkFilesByteForByte() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.varlinkDirectory.path)
            .filter { $0.hasSuffix(".varlink") }
        #expect(Set(files.map { String($0.dropLast(".varlink".count)) }) == Set(Interfaces.descriptions.keys))
        for (name, text) in Interfaces.descriptions {
            let data = try Data(contentsOf: Self.varlinkDirectory.appendingPathComponent(name + ".varlink"))
            #expect(Array(data) == Array(text.utf8), "\(name)")
            #expect(Interfaces.interfaceName(in: text) == name)
        }
    }

    @Test func everyMethodHasItsSignatureEntryAndTheTableIsTheParsedText() throws {
        for (name, text) in Interfaces.descriptions {
            let table = try #require(Interfaces.signatures[name], "\(name)")
            #expect(table == (try VarlinkInterfaceSignature(parsing: text)), "\(name)")
            for method in Interfaces.methodNames(in: text) {
                #expect(table.methods[method] != nil && table.outputs[method] != nil, "\(name).\(method)")
            }
        }
        #expect(Set(Interfaces.signatures.keys) == Set(Interfaces.descriptions.keys))
    }

    @Test func theFastPathKnowsEveryKeyOfTheMethodsItDecodes() {
        func knowsKeys(_ fields: [String]) {
            for field in fields {
                var key = Array(field.utf8)
                #expect(key.withUnsafeMutableBufferPointer { FastKey.known(UnsafeBufferPointer($0)) } != nil, "\(field)")
            }
        }
        func named(_ qualifiedName: String) -> FastMethod? {
            var name = Array(qualifiedName.utf8)
            return name.withUnsafeMutableBufferPointer { fastMethod(named: UnsafeBufferPointer($0)) }
        }
        for method in [AppMethod.beginBackgroundTask, .endBackgroundTask, .acknowledge] {
            guard case .app(let m)? = named(method.qualifiedName) else { Issue.record("\(method)"); continue }
            #expect(m == method)
            knowsKeys(method.parametersType.fields)
        }
        for method in [ManagerMethod.foreground, .background] {
            guard case .manager(let m)? = named(method.qualifiedName) else { Issue.record("\(method)"); continue }
            #expect(m == method)
            knowsKeys(method.parametersType.fields)
        }
    }

    /// The generated `write(into:)` gives the bytes of `JSON.write` of the struct's `json`, with optionals
    /// present, absent and sent as null.
    @Test func theGeneratedWritersWriteWhatJSONWriteWrites() {
        func same(_ m: some WireMessage, _ label: String) {
            var fast: [UInt8] = []
            m.write(into: &fast)
            var slow: [UInt8] = []
            JSON.object(m.json).write(into: &slow)
            #expect(String(decoding: fast, as: UTF8.self) == String(decoding: slow, as: UTF8.self), "\(label)")
        }
        let decision = ManagerWire.Decision(realtimeUSec: 5, appId: nil, decision: .grant, reason: .appRequest, message: "a \"b\"")
        let assertion = ManagerWire.Assertion(taskId: 1, appId: "a", name: "n", remainingUSec: nil, expiring: true, managerHold: false)
        let app = ManagerWire.AppInfo(
            appId: "org.example.A", name: "A", state: .background, pid: 42, uid: nil, lifecycleAware: true,
            assertions: [assertion, assertion], activities: [ManagerWire.Activity(activityId: 2, appId: "a", mode: .audio)],
            refreshSetting: false, refreshStatus: .available, backgroundTimeRemainingUSec: nil, pendingTaskRequests: 0,
            lastDecision: decision, refreshStatusReason: nil, lastForegroundUSec: 7)
        same(app, "AppInfo")
        same(ManagerWire.ListAppsReply(apps: [app, app]), "ListAppsReply")
        same(ManagerWire.ListAppsReply(apps: []), "ListAppsReply empty")
        same(ManagerWire.ExplainReply(state: .suspended, reasons: [decision], causes: ["x"]), "ExplainReply")
        same(ManagerWire.SetConditions(), "SetConditions empty")
        same(ManagerWire.SetConditions(onExternalPower: true), "SetConditions one")
        same(ManagerWire.SetConditions(onExternalPower: false, network: .metered), "SetConditions both")
        same(ManagerWire.DaemonStats(
            uptimeUSec: 1, apps: 2, connections: 3, calls: 4, decisions: 5, liveAssertions: 6, journalEntries: 7,
            journalDropped: 8, freezerBackend: "cgroup", freezerBackendReason: nil, dryRun: false, sleepsSeen: 3), "DaemonStats")
        let event = AppWire.Event(
            id: 3, kind: .notification, state: .background, needsAck: false, name: "n", payload: .object(["k": .array([.int(1)])]))
        same(event, "Event")
        same(AppWire.Event(id: 1, kind: .didEnterBackground, state: .background, needsAck: true, deadlineUSec: 9), "Event deadline")
        same(AppWire.CheckInReply(state: .active, refreshStatus: .available, event: event), "CheckInReply")
        same(AppWire.CheckInReply(state: .active, refreshStatus: nil, event: nil), "CheckInReply bare")
        same(AppWire.BackgroundTimeRemainingReply(remainingUSec: nil), "BackgroundTimeRemainingReply null")
        same(ServiceWire.GetInfoReply(vendor: "v", product: "p", version: "1", url: "u", interfaces: ["a", "b"]), "GetInfoReply")
    }
}
