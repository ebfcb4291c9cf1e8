import BGTaskModel
import Testing
@testable import BGTaskProtocol

/// Begin/End/Acknowledge and the manager's Foreground/Background decoded without a JSON tree, exactly as
/// strict as the full decoder;
/// replies written from preformatted parts, byte for byte what `JSON.write` makes.
@Suite struct FastDecoderTests {
    static let registry: VarlinkInterfaceRegistry = {
        var r = VarlinkInterfaceRegistry()
        for d in [Interfaces.service, Interfaces.app, Interfaces.manager] { try? r.register(description: d) }
        return r
    }()

    /// What the daemon's decoder makes of one message (fast path first, as the server runs it).
    static func inbound(_ text: String) -> VarlinkInbound? {
        var d = VarlinkInboundDecoder(maxMessageSize: 65536)
        d.append(Array(text.utf8) + [0])
        return d.next()
    }

    /// Parameters in key order: two dictionaries with the same contents may iterate in different orders.
    static func sorted(_ parameters: [String: JSON]) -> String {
        parameters.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
    }

    /// What the full decoder alone makes of it, with the registry's checks: the behaviour before.
    static func full(_ text: String) -> String {
        do {
            let call = try VarlinkCall.decode(Array(text.utf8))
            return registry.check(call).map { "reject \($0)" } ?? "call \(call.method) \(sorted(call.parameters))"
        } catch {
            return "error \(error)"
        }
    }

    static let begin = #"{"method":"io.bgtaskd.App.BeginBackgroundTask","parameters":{"appId":"org.example.Mail","name":"sync"}}"#

    @Test(arguments: [
        begin,
        #"{"method":"io.bgtaskd.App.BeginBackgroundTask","parameters":{"appId":"org.example.Mail"}}"#,
        #"{"method":"io.bgtaskd.App.BeginBackgroundTask","parameters":{"name":null,"appId":"org.example.Mail"}}"#,
        #"{"parameters":{"appId":"a","taskId":12},"method":"io.bgtaskd.App.EndBackgroundTask"}"#,
        #" { "method" : "io.bgtaskd.App.EndBackgroundTask" , "parameters" : { "taskId" : 0 , "appId" : "a" } } "#,
        #"{"method": "io.bgtaskd.App.Acknowledge", "parameters": {"eventId": 9}, "more": false, "oneway": true}"#,
        #"{"method":"io.bgtaskd.App.BeginBackgroundTask","parameters":{"appId":"org.exämple.Mail","name":"€ ✓"}}"#,
        #"{"method":"io.bgtaskd.Manager.Foreground","parameters":{"appId":"org.example.Mail"}}"#,
        #"{"method":"io.bgtaskd.Manager.Foreground","parameters":{"exclusive":false,"appId":"org.example.Mail"}}"#,
        #"{"parameters":{"appId":"a","exclusive":null},"method":"io.bgtaskd.Manager.Foreground","more":false}"#,
        #"{"method":"io.bgtaskd.Manager.Background","parameters":{"appId":"org.example.Mail"}}"#,
        #" {"parameters" : { "appId" : "a" } , "method" : "io.bgtaskd.Manager.Background" } "#,
    ])
    func commonCallsTakeTheFastPath(_ text: String) throws {
        let bytes = Array(text.utf8)
        let fast = try #require(VarlinkFastDecoder.decode(bytes), "not decoded by the fast path")
        #expect(fast.typedParameters != nil)
        #expect(VarlinkFastDecoder.disagreement(on: bytes, registry: Self.registry) == nil)
        guard case .call(let call)? = Self.inbound(text) else { Issue.record("no call"); return }
        #expect(call.fast != nil, "the server's decoder takes the fast path")
        let full = try VarlinkCall.decode(bytes)
        #expect(call.method == full.method && call.more == full.more && call.oneway == full.oneway)
    }

    @Test(arguments: [
        // Escapes, control characters, another method, unknown or repeated keys, other types, numbers that
        // are not plain integers, values out of range, missing fields, trailing bytes, nesting, upgrade.
        #"{"method":"io.bgtaskd.App.BeginBackgroundTask","parameters":{"appId":"org.example.Ma\u0069l"}}"#,
        #"{"method":"io.bgtaskd.App.BeginBackgroundTask","parameters":{"appId":"a\"b"}}"#,
        #"{"method":"io.bgtaskd.App.BeginBackgroundTas\u006b","parameters":{"appId":"a"}}"#,
        #"{"method":"io.bgtaskd.App.CheckIn","parameters":{"appId":"a"},"more":true}"#,
        #"{"method":"io.bgtaskd.App.BeginBackgroundTask","parameters":{"appId":"a","extra":1}}"#,
        #"{"method":"io.bgtaskd.App.BeginBackgroundTask","parameters":{"appId":"a","appId":"b"}}"#,
        #"{"method":"io.bgtaskd.App.BeginBackgroundTask","method":"io.bgtaskd.App.BeginBackgroundTask","parameters":{"appId":"a"}}"#,
        #"{"method":"io.bgtaskd.App.BeginBackgroundTask","parameters":{"appId":"a"},"parameters":{"appId":"b"}}"#,
        #"{"method":"io.bgtaskd.App.BeginBackgroundTask","parameters":{"appId":7}}"#,
        #"{"method":"io.bgtaskd.App.BeginBackgroundTask","parameters":{"appId":"a","name":5}}"#,
        #"{"method":"io.bgtaskd.App.BeginBackgroundTask","parameters":{"appId":null}}"#,
        #"{"method":"io.bgtaskd.App.BeginBackgroundTask","parameters":{}}"#,
        #"{"method":"io.bgtaskd.App.BeginBackgroundTask","parameters":null}"#,
        #"{"method":"io.bgtaskd.App.BeginBackgroundTask"}"#,
        #"{"method":"io.bgtaskd.App.EndBackgroundTask","parameters":{"appId":"a","taskId":"3"}}"#,
        #"{"method":"io.bgtaskd.App.EndBackgroundTask","parameters":{"appId":"a","taskId":3.0}}"#,
        #"{"method":"io.bgtaskd.App.EndBackgroundTask","parameters":{"appId":"a","taskId":3e0}}"#,
        #"{"method":"io.bgtaskd.App.EndBackgroundTask","parameters":{"appId":"a","taskId":03}}"#,
        #"{"method":"io.bgtaskd.App.EndBackgroundTask","parameters":{"appId":"a","taskId":-3}}"#,
        #"{"method":"io.bgtaskd.App.EndBackgroundTask","parameters":{"appId":"a","taskId":-0}}"#,
        #"{"method":"io.bgtaskd.App.EndBackgroundTask","parameters":{"appId":"a","taskId":99999999999999999999}}"#,
        #"{"method":"io.bgtaskd.App.EndBackgroundTask","parameters":{"appId":"a"}}"#,
        #"{"method":"io.bgtaskd.App.Acknowledge","parameters":{"eventId":0}}"#,
        #"{"method":"io.bgtaskd.App.Acknowledge","parameters":{"eventId":true}}"#,
        #"{"method":"io.bgtaskd.App.Acknowledge","parameters":{"eventId":1}} x"#,
        #"{"method":"io.bgtaskd.App.Acknowledge","parameters":{"eventId":1},"upgrade":true}"#,
        #"{"method":"io.bgtaskd.App.Acknowledge","parameters":{"eventId":1},"more":null}"#,
        #"{"method":"io.bgtaskd.App.Acknowledge","parameters":{"eventId":{"a":1}}}"#,
        #"{"method":"io.bgtaskd.App.Acknowledge","parameters":{"eventId":1}"#,
        #"["io.bgtaskd.App.Acknowledge"]"#,
        #"{"method":"io.bgtaskd.Manager.Foreground","parameters":{"appId":"a","exclusive":"yes"}}"#,
        #"{"method":"io.bgtaskd.Manager.Foreground","parameters":{"appId":"a","exclusive":1}}"#,
        #"{"method":"io.bgtaskd.Manager.Foreground","parameters":{"exclusive":true}}"#,
        #"{"method":"io.bgtaskd.Manager.Foreground","parameters":{"appId":"a","exclusive":true,"exclusive":false}}"#,
        #"{"method":"io.bgtaskd.Manager.Foreground","parameters":{"appId":"a","background":true}}"#,
        #"{"method":"io.bgtaskd.Manager.Foreground","parameters":{}}"#,
        #"{"method":"io.bgtaskd.Manager.Background","parameters":{"appId":"a","extra":1}}"#,
        #"{"method":"io.bgtaskd.Manager.Background","parameters":{"appId":null}}"#,
        #"{"method":"io.bgtaskd.Manager.Background","parameters":{"appId":"\u0061"}}"#,
        #"{"method":"io.bgtaskd.Manager.Launch","parameters":{"appId":"a"}}"#,
    ])
    func anythingUnusualGoesTheFullWay(_ text: String) {
        #expect(VarlinkFastDecoder.decode(Array(text.utf8)) == nil, "the fast path must leave this to the full decoder")
        // And the server's decoder answers as the full decoder did before.
        let before = Self.full(text)
        switch Self.inbound(text) {
        case .call(let call)?:
            #expect(call.fast == nil)
            #expect(before == (Self.registry.check(call).map { "reject \($0)" } ?? "call \(call.method) \(Self.sorted(call.parameters))"))
        case .reject(let error)?: #expect(before.hasPrefix("error"), "\(error)")
        case .close?: #expect(before.hasPrefix("error"))
        case nil: Issue.record("no answer")
        }
    }

    /// A deterministic generator (SplitMix64), so that a failure names its seed.
    struct Random {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    }

    @Test func mutatedCallsNeverMakeTheTwoDecodersDisagree() {
        let seeds = [
            Self.begin,
            #"{"method":"io.bgtaskd.App.EndBackgroundTask","parameters":{"appId":"org.example.Mail","taskId":42}}"#,
            #"{"method": "io.bgtaskd.App.Acknowledge", "parameters": {"eventId": 7}, "oneway": true}"#,
            #"{"method":"io.bgtaskd.Manager.Foreground","parameters":{"appId":"org.example.Mail","exclusive":true}}"#,
            #"{"method":"io.bgtaskd.Manager.Background","parameters":{"appId":"org.example.Mail"}}"#,
        ].map { Array($0.utf8) }
        let alphabet = Array(#"{}[]":,0123456789-+.eE truefalsnl\u"#.utf8) + [0x0A, 0xC3, 0xA4, 0x7F, 0x01]
        var rng = Random(state: 15)
        var fastCount = 0
        for round in 0..<30_000 {
            var m = seeds[round % seeds.count]
            for _ in 0..<(1 + rng.below(3)) {
                let at = rng.below(m.count + 1)
                switch rng.below(3) {
                case 0 where at < m.count: m[at] = alphabet[rng.below(alphabet.count)]
                case 1: m.insert(alphabet[rng.below(alphabet.count)], at: at)
                default: if at < m.count { m.remove(at: at) }
                }
            }
            if VarlinkFastDecoder.decode(m) != nil { fastCount += 1 }
            if let why = VarlinkFastDecoder.disagreement(on: m, registry: Self.registry) {
                Issue.record("round \(round): \(why): \(String(decoding: m, as: UTF8.self))")
                return
            }
        }
        // The mutations keep many messages valid: the comparison is not vacuous.
        #expect(fastCount > 1_000)
    }

    @Test func preformattedRepliesAreTheBytesJSONWriteMakes() {
        var rng = Random(state: 7)
        let ints: [Int64] = [0, 1, -1, 9, 10, 99, 100, 1_000_000, .max, .min, -9_223_372_036_854_775_807]
        let strings = ["", "sync", "a\"b", "back\\slash", "tab\t", "nl\n", "\u{01}", "€ ✓", "org.example.Mail"]
        func same(_ m: some WireMessage) {
            var fast: [UInt8] = []
            m.write(into: &fast)
            var full: [UInt8] = []
            JSON.object(m.json).write(into: &full)
            #expect(String(decoding: fast, as: UTF8.self) == String(decoding: full, as: UTF8.self))
        }
        for i in ints {
            same(AppWire.BeginBackgroundTaskReply(taskId: TaskID(UInt64(bitPattern: i))))
            same(AppWire.BeginActivityReply(activityId: ActivityID(UInt64(bitPattern: i))))
            same(ManagerWire.HoldReply(holdId: i))
            var out: [UInt8] = []
            JSON.writeInt(i, into: &out)
            #expect(String(decoding: out, as: UTF8.self) == String(i))
        }
        same(WireEmpty())
        for _ in 0..<2_000 {
            func maybe<T>(_ v: T) -> T? { rng.below(2) == 0 ? nil : v }
            let event = AppWire.Event(
                id: EventID(UInt64(bitPattern: ints[rng.below(ints.count)])), kind: LifecycleEventKind.allCases[rng.below(LifecycleEventKind.allCases.count)],
                state: AppState.allCases[rng.below(AppState.allCases.count)], needsAck: rng.below(2) == 0,
                taskId: maybe(TaskID(UInt64(bitPattern: ints[rng.below(ints.count)]))), taskName: maybe(strings[rng.below(strings.count)]),
                identifier: maybe(strings[rng.below(strings.count)]), name: maybe(strings[rng.below(strings.count)]),
                payload: maybe(["k": .string(strings[rng.below(strings.count)]), "n": 1]),
                launchReason: maybe(LaunchReason.allCases[rng.below(LaunchReason.allCases.count)]),
                deadlineUSec: maybe(ints[rng.below(ints.count)]))
            same(event)
            same(AppWire.CheckInReply(
                state: AppState.allCases[rng.below(AppState.allCases.count)],
                refreshStatus: maybe(RefreshStatus.allCases[rng.below(RefreshStatus.allCases.count)]), event: maybe(event)))
        }
    }

    @Test func theFastPathsMethodNamesAreTheContracts() {
        for m in [AppMethod.beginBackgroundTask, .endBackgroundTask, .acknowledge] {
            let text = #"{"method":""# + m.qualifiedName + #"","parameters":{"appId":"a","taskId":1,"eventId":1}}"#
            // Unknown keys for each method: declined, but only after the method was recognised; a
            // minimal valid call of each is recognised.
            #expect(VarlinkFastDecoder.decode(Array(text.utf8)) == nil)
        }
        #expect(VarlinkFastDecoder.decode(Array(#"{"method":"io.bgtaskd.App.Acknowledge","parameters":{"eventId":1}}"#.utf8))?.appMethod == .acknowledge)
        #expect(VarlinkFastDecoder.decode(Array(#"{"method":"io.bgtaskd.App.EndBackgroundTask","parameters":{"appId":"a","taskId":1}}"#.utf8))?.appMethod == .endBackgroundTask)
        #expect(VarlinkFastDecoder.decode(Array(#"{"method":"io.bgtaskd.App.BeginBackgroundTask","parameters":{"appId":"a"}}"#.utf8))?.appMethod == .beginBackgroundTask)
        for m in [ManagerMethod.foreground, .background] {
            let text = #"{"method":""# + m.qualifiedName + #"","parameters":{"appId":"a","taskId":1}}"#
            #expect(VarlinkFastDecoder.decode(Array(text.utf8)) == nil)
            let minimal = #"{"method":""# + m.qualifiedName + #"","parameters":{"appId":"a"}}"#
            let call = VarlinkFastDecoder.decode(Array(minimal.utf8))
            #expect(call?.managerMethod == m && call?.appMethod == nil)
            #expect(call.flatMap { ManagerMethod($0) } == m && call.flatMap { AppMethod($0) } == nil)
        }
    }
}
