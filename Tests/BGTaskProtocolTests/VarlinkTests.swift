import Testing
@testable import BGTaskProtocol

@Suite struct FramingTests {
    static let messages: [[UInt8]] = [
        VarlinkCall(method: "org.varlink.service.GetInfo").encoded(),
        VarlinkCall(method: "io.bgtaskd.App.BeginBackgroundTask", parameters: ["appId": "org.example.Mail", "name": "sync"]).encoded(),
        VarlinkCall(method: "io.bgtaskd.App.CheckIn", parameters: ["appId": "a"], more: true).encoded(),
    ]

    func collect(_ chunks: [[UInt8]]) throws -> [VarlinkCall] {
        var framer = VarlinkFramer()
        var out: [VarlinkCall] = []
        for chunk in chunks {
            framer.append(chunk)
            while let m = try framer.next() { out.append(try VarlinkCall.decode(m)) }
        }
        #expect(framer.bufferedCount == 0)
        return out
    }

    @Test func dripFedByteByByte() throws {
        let all = Self.messages.flatMap { $0 }
        let calls = try collect(all.map { [$0] })
        #expect(calls.map(\.method) == ["org.varlink.service.GetInfo", "io.bgtaskd.App.BeginBackgroundTask", "io.bgtaskd.App.CheckIn"])
        #expect(calls[2].more)
        #expect(calls[1].parameters["name"] == "sync")
    }

    @Test func batchedAndSplitAtEveryOffset() throws {
        let all = Self.messages.flatMap { $0 }
        for cut in 0...all.count {
            let calls = try collect([Array(all[..<cut]), Array(all[cut...])])
            #expect(calls.count == 3)
        }
    }

    @Test func oversizedMessageWithoutTerminatorFails() {
        var framer = VarlinkFramer(maxMessageSize: 100)
        framer.append([UInt8](repeating: 0x20, count: 101))
        #expect(throws: VarlinkFramer.Failure.messageTooLarge) { _ = try framer.next() }
    }

    @Test func oversizedMessageWithTerminatorFails() {
        var framer = VarlinkFramer(maxMessageSize: 100)
        framer.append([UInt8](repeating: 0x20, count: 150) + [0])
        #expect(throws: VarlinkFramer.Failure.messageTooLarge) { _ = try framer.next() }
    }

    /// The buffer is compacted lazily (on the next append or next()), while a message returned before may
    /// still be held: what the caller holds never changes, emptied or shifted buffer alike.
    @Test func messagesHeldAcrossCompactionStayIntact() throws {
        var framer = VarlinkFramer()
        var held: [(ArraySlice<UInt8>, [UInt8])] = []
        for n in 0..<400 {
            let body = Array("message \(n) ".utf8) + [UInt8](repeating: UInt8(ascii: "a") + UInt8(n % 26), count: n % 37)
            framer.append(body + [0] + Array("part".utf8))
            let m = try #require(try framer.next())
            held.append((m, body))
            #expect(try framer.next() == nil)
            framer.append([0])  // ends "part": the buffer empties on the next call
            #expect(try framer.next().map(Array.init) == Array("part".utf8))
        }
        #expect(framer.bufferedCount == 0)
        #expect(held.allSatisfy { Array($0.0) == $0.1 })
        // A stream cut inside every message: the buffer never empties, and is shifted once past 4 KiB.
        var stream = VarlinkFramer()
        let bodies = (0..<400).map { Array("message \($0) of a stream that never empties the buffer".utf8) }
        var kept: [(ArraySlice<UInt8>, [UInt8])] = []
        stream.append(bodies[0].prefix(5))
        for n in bodies.indices {
            stream.append(Array(bodies[n].dropFirst(5)) + [0] + (n + 1 < bodies.count ? Array(bodies[n + 1].prefix(5)) : []))
            kept.append((try #require(try stream.next()), bodies[n]))
            #expect(try stream.next() == nil)
        }
        #expect(kept.allSatisfy { Array($0.0) == $0.1 })
    }

    @Test func messageAtTheLimitPasses() throws {
        var framer = VarlinkFramer(maxMessageSize: 100)
        framer.append([UInt8](repeating: 0x20, count: 100) + [0])
        #expect(try framer.next()?.count == 100)
    }
}

@Suite struct MessageTests {
    @Test func goldenCall() {
        let call = VarlinkCall(method: "io.bgtaskd.App.EndBackgroundTask", parameters: ["appId": "org.example.Mail", "taskId": 7], oneway: true)
        #expect(String(decoding: call.encoded().dropLast(), as: UTF8.self)
            == #"{"method":"io.bgtaskd.App.EndBackgroundTask","oneway":true,"parameters":{"appId":"org.example.Mail","taskId":7}}"#)
        #expect(call.encoded().last == 0)
    }

    @Test func goldenReplies() throws {
        #expect(String(decoding: VarlinkReply(parameters: ["taskId": 1], continues: true).encoded().dropLast(), as: UTF8.self)
            == #"{"continues":true,"parameters":{"taskId":1}}"#)
        #expect(String(decoding: VarlinkReply.failure(.methodNotFound("x.Y")).encoded().dropLast(), as: UTF8.self)
            == #"{"error":"org.varlink.service.MethodNotFound","parameters":{"method":"x.Y"}}"#)
        // The hand-written envelope gives exactly the bytes of the generic writer, for every shape.
        for continues in [false, true] {
            for error in [nil, "a.B", "quote\"d"] as [String?] {
                for parameters in [[:], ["one": 1], ["b": "x", "a": [true, false, .null], "c": ["z": 1, "y": 2.5]]] as [[String: JSON]] {
                    let reply = VarlinkReply(parameters: parameters, continues: continues, error: error)
                    var envelope: [String: JSON] = ["parameters": .object(parameters)]
                    if continues { envelope["continues"] = true }
                    if let error { envelope["error"] = .string(error) }
                    #expect(reply.encoded() == Array(JSON.object(envelope).serialized().utf8) + [0])
                    #expect(try VarlinkReply.decode(reply.encoded().dropLast()) == reply)
                }
            }
        }
    }

    @Test(arguments: [
        (#"[]"#, VarlinkCall.DecodeError.notAnObject),
        (#"{}"#, .missingMethod),
        (#"{"method":5}"#, .invalidField("method")),
        (#"{"method":"a.B","parameters":[]}"#, .invalidField("parameters")),
        (#"{"method":"a.B","more":"yes"}"#, .invalidField("more")),
    ])
    func invalidCalls(text: String, error: VarlinkCall.DecodeError) {
        #expect(throws: error) { _ = try VarlinkCall.decode(Array(text.utf8)) }
    }

    @Test func interfaceAndMethodNames() {
        let call = VarlinkCall(method: "io.bgtaskd.Manager.ListApps")
        #expect(call.interface == "io.bgtaskd.Manager")
        #expect(call.methodName == "ListApps")
    }

    /// The split is stored: it must follow a changed method, and cope with odd names.
    @Test(arguments: [
        ("org.varlink.service.GetInfo", "org.varlink.service", "GetInfo"), ("NoDot", "", "NoDot"),
        ("trailing.", "trailing", ""), ("é.ü.Ω", "é.ü", "Ω"),
    ])
    func splitFollowsAChangedMethod(method: String, interface: String, name: String) {
        var changed = VarlinkCall(method: "io.bgtaskd.Manager.ListApps")
        changed.method = method
        #expect(changed.interface == interface[...])
        #expect(changed.methodName == name[...])
        #expect(changed == VarlinkCall(method: method))
    }

    /// A call keeps its fields in a shared box: a copy changed afterwards is the only one changed, and
    /// copies compare equal until then.
    @Test func aChangedCopyLeavesTheOriginalAlone() {
        let original = VarlinkCall(method: "io.bgtaskd.Manager.ListApps", parameters: ["a": .bool(true)], more: true)
        var copy = original
        #expect(copy == original)
        copy.method = "org.varlink.service.GetInfo"
        copy.parameters = [:]
        copy.more = false
        copy.oneway = true
        #expect(original.method == "io.bgtaskd.Manager.ListApps" && original.methodName == "ListApps")
        #expect(original.parameters == ["a": .bool(true)] && original.more && !original.oneway)
        #expect(copy.interface == "org.varlink.service" && copy.methodName == "GetInfo" && copy.oneway)
        #expect(copy != original)
        #expect(String(describing: original).hasPrefix("VarlinkCall(method: \"io.bgtaskd.Manager.ListApps\""))
    }

    @Test func idlDeclaresSpecMethods() {
        let app = Interfaces.methodNames(in: Interfaces.app)
        for m in ["CheckIn", "Acknowledge", "BeginBackgroundTask", "EndBackgroundTask", "BackgroundTimeRemaining",
                  "BeginActivity", "EndActivity", "SubmitTaskRequest", "CancelTaskRequest", "CancelAllTaskRequests",
                  "PendingTaskRequests", "CompleteTask", "RefreshStatus"] {
            #expect(app.contains(m), "io.bgtaskd.App lacks \(m)")
        }
        let manager = Interfaces.methodNames(in: Interfaces.manager)
        for m in ["ListApps", "GetApp", "ListAssertions", "GetSettings", "Explain", "Monitor", "Stats", "Launch",
                  "Foreground", "Background", "Interrupt", "EndInterruption", "Terminate", "SetRefreshPolicy",
                  "SetGlobalRefresh", "SetLowPowerMode", "SetConditions", "PostNotification",
                  "WakeForRemoteNotification", "RunTaskNow", "Reload"] {
            #expect(manager.contains(m), "io.bgtaskd.Manager lacks \(m)")
        }
        #expect(Interfaces.interfaceName(in: Interfaces.app) == "io.bgtaskd.App")
        #expect(Interfaces.interfaceName(in: Interfaces.manager) == "io.bgtaskd.Manager")
    }
}
