import BGTaskCore
import BGTaskProtocol
import Testing
@testable import BGTaskDaemon

// SPEC §17: a recording's checkpoints kept compact (InputRecorder+Compact.swift). The compact bytes hold the
// core's JSON value exactly; the core read back from them decides as the live one; a recording whose
// checkpoints were compacted replays with no mismatch and is the document it was.
@Suite struct CheckpointCompactTests {
    /// A core fed varied inputs: 60 apps registered (refresh permitted for some), launched, checked in (for
    /// scenes, some), scenes changed, assertions begun and some ended, activities, refresh requests,
    /// notifications with payloads, and RecordReplayTests' lifecycle rounds (grace, freeze, terminate). With
    /// `compact`, each checkpoint the recorder takes is compacted at once (as the daemon does, later); with
    /// `compactBlocks`, each full block of inputs too.
    static func variedCore(compact: Bool = false, compactBlocks: Bool = false) throws -> (DaemonCore, InputRecorder) {
        let apps = (0..<60).compactMap { AppID("org.example.Compact\($0)") }
        let refresh = RefreshConfig(apps: Dictionary(uniqueKeysWithValues: apps.prefix(20).map {
            ($0, RefreshConfig.App(permittedIdentifiers: ["\($0.rawValue).refresh"], backgroundModes: [.fetch]))
        }))
        let start = RecordingStart(lifecycle: .default, journal: JournalBudget.Limits(), denial: DenialBudget.Limits(), refresh: refresh)
        var core = start.makeCore()
        var recorder = InputRecorder(start: core, maxBytes: 64 << 10)
        var t: Int64 = 1_000_000
        var request: UInt64 = 0
        func take(_ input: CoreInput) throws {
            t += 700
            let now = Instant(microseconds: t), wall = RealtimeInstant(microsecondsSinceEpoch: 1_700_000_000_000_000 + t)
            let actions = core.handle(input, now: now, wall: wall)
            if recorder.append(input, monotonic: now, realtime: wall, actions: actions) {
                recorder.startSegment(core)
                if compact, let (number, checkpoint) = recorder.checkpointToCompact {
                    recorder.compacted(number, try InputRecorder.encode(checkpoint))
                    #expect(recorder.checkpointToCompact == nil)
                }
            }
            if compactBlocks, let (block, entries) = recorder.blockToCompact {
                recorder.compacted(block: block, try InputRecorder.encode(block: entries))
                #expect(!recorder.hasBlockToCompact)
            }
        }
        func call(_ input: Input) throws {
            request += 1
            try take(.lifecycle(input, request: RequestID(request), from: nil))
        }
        try take(.lifecycle(.appsRegistered(apps.enumerated().map { k, app in
            AppManifest(id: app, lifecycleAware: k % 3 != 0, backgroundModes: k < 20 ? [.fetch] : [])
        }), request: nil, from: nil))
        try take(.refresh(.stateLoaded(RefreshState()), request: nil, from: nil))
        try take(.refresh(.started(detectedPower: nil), request: nil, from: nil))
        let scene = SceneID("main")!
        for (k, app) in apps.enumerated() {
            let connection = ConnectionID(UInt64(100 + k))
            try call(.launchRequested(app, background: k % 2 == 0, exclusive: false))
            try take(.lifecycle(.appLaunched(app, pid: Int32(2_000 + k)), request: nil, from: nil))
            if k % 4 == 1 {
                try call(.appCheckedInForScenes(app, connection: connection, pid: Int32(2_000 + k)))
                try call(.sceneStateChanged(app, scene, .foregroundActive, title: "Window \(k)", output: "HDMI-1", reason: .compositorFocus))
            } else {
                try call(.appCheckedIn(app, connection: connection, pid: Int32(2_000 + k)))
            }
            for n in 0..<10 { try call(.assertionRequested(app, connection: connection, name: n % 2 == 0 ? "sync \(n)" : nil)) }
            if k % 5 == 0 { try call(.activityRequested(app, connection: connection, mode: .fetch)) }
            if k < 20 {
                try take(.refresh(.taskSubmitted(app, TaskRequest(
                    identifier: "\(app.rawValue).refresh", kind: .refresh,
                    earliestBegin: RealtimeInstant(microsecondsSinceEpoch: 1_700_000_100_000_000 + Int64(k)))),
                    request: RequestID(900_000 + UInt64(k)), from: nil))
            }
            try call(.notificationPosted(name: "n\(k)", app: app, payload: Payload(json: "{\"k\":\(k),\"s\":\"é\\u0000\"}")))
            if k % 3 == 0 { try call(.backgroundRequested(app)) }
        }
        for task in stride(from: 1, to: 200, by: 3) { try call(.assertionEndRequested(apps[task % apps.count], TaskID(UInt64(task)))) }
        for _ in 0..<6 {
            for app in apps.suffix(8) {
                try call(.foregroundRequested(app, exclusive: false))
                try call(.backgroundRequested(app))
            }
            t += LifecycleConfig.default.didEnterBackgroundTimeout.microseconds
            try take(.deadlineReached)
        }
        try take(.deadlineReached)
        return (core, recorder)
    }

    /// Encoded and decoded, the core's JSON value is the same to the last member, and the core read back
    /// decides as the live one.
    /// SPEC §14: the work the idle inhibition counts is kept as a running sum that is not encoded; a core
    /// read back from a checkpoint (as a replay starts) counts it again from its records and tells the
    /// same inhibitions, counts and all, as the live core it was taken from.
    @Test func aCoreReadBackTellsTheSameIdleInhibitions() throws {
        var (live, _) = try Self.variedCore()
        var readBack = try JSON(compact: JSON.compactEncode(live)).decode(DaemonCore.self)
        var told: [IdleInhibition?] = []
        var t: Int64 = 900_000_000
        // Each app's connection closes in turn (its tasks go with it), then one app takes up work again:
        // the set of apps with live work shrinks to none and grows again.
        let before = readBack.lifecycle.apps(now: Instant(microseconds: t)).filter { !$0.assertions.isEmpty }
        var inputs: [CoreInput] = (0..<60).map { .lifecycle(.connectionClosed(ConnectionID(UInt64(100 + $0))), request: nil, from: nil) }
        let app = AppID("org.example.Compact7")!
        inputs.append(.lifecycle(.appCheckedIn(app, connection: ConnectionID(707), pid: 2_007), request: RequestID(800_000), from: nil))
        inputs.append(.lifecycle(.assertionRequested(app, connection: ConnectionID(707), name: "again"), request: RequestID(800_001), from: nil))
        for input in inputs {
            t += 1_000
            let now = Instant(microseconds: t), wall = RealtimeInstant(microsecondsSinceEpoch: 1_700_000_000_000_000 + t)
            let actions = live.handle(input, now: now, wall: wall)
            #expect(readBack.handle(input, now: now, wall: wall) == actions)
            for case .perform(.inhibitIdle(let live), _, _) in actions { told.append(live) }
        }
        // The first, after the first connection's work went: the others' assertions, counted again.
        let first = before.dropFirst().reduce(0) { $0 + $1.assertions.count }
        #expect(before.count == 60 && told.first??.appCount == 59 && told.first??.assertions == first)
        #expect(told.count == 61 && told[59] == nil && told.last??.appCount == 1 && told.last??.assertions == 1)
    }

    @Test func aCompactCoreReadsBackExactly() throws {
        var (core, _) = try Self.variedCore()
        let json = try JSON.encode(core)
        let bytes = try InputRecorder.encode(core)
        #expect(try JSON(compact: bytes) == json)
        #expect(try JSON(compact: bytes).serialized() == json.serialized())
        var copy = try InputRecorder.decode(bytes)
        // Sets and dictionaries are written in their hash order, which differs between two instances.
        #expect(try JSON.encode(copy).serialized().utf8.count == json.serialized().utf8.count)
        let text = json.serialized().utf8.count
        #expect(bytes.count * 3 < text, "\(bytes.count) compact bytes for \(text) of JSON")
        // Kept at its size: the encoder's doubling room is not carried (within 4 KiB).
        #expect(bytes.capacity - bytes.count <= 4096, "\(bytes.capacity) for \(bytes.count)")
        var grown: [UInt8] = []
        grown.reserveCapacity(100_000)
        grown.append(contentsOf: repeatElement(7, count: 10_000))
        let exact = InputRecorder.exact(grown)
        #expect(grown.capacity >= 100_000 && exact == grown && exact.capacity - exact.count <= 4096)
        let later = Instant(microseconds: 9_000_000_000)
        #expect(copy.handle(.deadlineReached, now: later) == core.handle(.deadlineReached, now: later))
    }

    /// Every JSON value the compact form can hold comes back the same.
    @Test func everyKindOfValueReadsBack() throws {
        let value = JSON.object([
            "a": .array([.null, .bool(true), .bool(false), .int(0), .int(-1), .int(.min), .int(.max), .double(-0.0),
                         .double(.infinity), .double(1.5e-300), .string(""), .string("é\u{0}😀"), .string("é\u{0}😀")]),
            "b": .array([.object(["x": .int(1), "y": .string("a")]), .object(["x": .int(2), "y": .string("b")]), .object([:])]),
            "": .object(["x": .array([])]),
        ])
        #expect(try JSON(compact: value.compact()) == value)
        #expect(throws: JSONCodingError.self) { try JSON(compact: Array(value.compact().dropLast())) }
        #expect(throws: JSONCodingError.self) { try JSON(compact: [0xB1, 9]) }
    }

    /// Written as it encodes: nested containers closed in order, a value that writes nothing is null (as in
    /// `JSON.encode`'s tree), and a container written to after an outer one wrote again is refused.
    @Test func theStreamingEncoderMatchesTheTree() throws {
        struct Nothing: Encodable { func encode(to encoder: any Encoder) throws {} }
        struct Nested: Encodable {
            enum K: String, CodingKey { case a, b, c }
            let inOrder: Bool
            func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: K.self)
                var inner = c.nestedContainer(keyedBy: K.self, forKey: .a)
                try inner.encode(1, forKey: .b)
                var list = c.nestedUnkeyedContainer(forKey: .b)
                try list.encode([Nothing(), Nothing()])
                try list.encodeNil()
                if inOrder { try c.encode("x", forKey: .c) } else {
                    try c.encode("x", forKey: .c)
                    try inner.encode(2, forKey: .c)
                }
            }
        }
        let value = [Nested(inOrder: true), Nested(inOrder: true)]
        #expect(try JSON(compact: JSON.compactEncode(value)) == JSON.encode(value))
        #expect(throws: JSONCodingError.self) { try JSON.compactEncode(Nested(inOrder: false)) }
    }

    /// Every scalar type, through the containers' own requirements (what synthesized conformances call) and
    /// through the generic path (an array's elements, an optional, a single-value container), is written
    /// as the tree encoder reads it; an unsigned integer past `Int64.max` is refused by both; and the coding
    /// path a value sees is its keys from the root.
    @Test func everyScalarIsWrittenAsTheTreeHasIt() throws {
        struct Scalars: Encodable {
            var s = "é😀", b = true, i = -7, i8: Int8 = -8, i16: Int16 = -16, i32: Int32 = .min, i64: Int64 = .max
            var u: UInt = 1, u8: UInt8 = 255, u16: UInt16 = 65535, u32: UInt32 = .max, u64: UInt64 = UInt64(Int64.max)
            var d = -0.5, f: Float = 1.25, none: Int? = nil, some: UInt64? = 3
        }
        struct Wrapped<T: Encodable>: Encodable {
            let value: T
            func encode(to encoder: any Encoder) throws {
                var c = encoder.singleValueContainer()
                try c.encode(value)
            }
        }
        let value = Scalars()
        #expect(try JSON(compact: JSON.compactEncode(value)) == JSON.encode(value))
        let generic: [Wrapped<Scalars>] = [Wrapped(value: value)]
        #expect(try JSON(compact: JSON.compactEncode(generic)) == JSON.encode(generic))
        let list: [UInt64] = [0, 1, UInt64(Int64.max)]
        #expect(try JSON(compact: JSON.compactEncode(list)) == JSON.encode(list))
        #expect(throws: JSONCodingError.self) { try JSON.compactEncode(["k": UInt64.max]) }
        #expect(throws: JSONCodingError.self) { try JSON.compactEncode(Scalars(u64: .max)) }
        #expect(throws: JSONCodingError.self) { try JSON.compactEncode([UInt(Int64.max) + 1]) }

        final class Paths: @unchecked Sendable { var seen: [String] = [] }
        struct Leaf: Encodable {
            let paths: Paths
            func encode(to encoder: any Encoder) throws {
                paths.seen.append(encoder.codingPath.map(\.stringValue).joined(separator: "."))
                var c = encoder.singleValueContainer()
                try c.encode(1)
            }
        }
        struct Tree: Encodable {
            let paths: Paths
            enum K: String, CodingKey { case left, right }
            func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: K.self)
                try c.encode(Leaf(paths: paths), forKey: .left)
                try c.encode(["x": Leaf(paths: paths)], forKey: .right)
            }
        }
        let paths = Paths()
        _ = try JSON.compactEncode(["root": Tree(paths: paths)])
        #expect(paths.seen == ["root.left", "root.right.x"])
    }

    /// The recorder's checkpoints compacted as the daemon does: the recording is the same document as with
    /// the copies, it has no mismatch, and it replays.
    @Test func aRecordingFromCompactCheckpointsReplays() throws {
        let (_, plain) = try Self.variedCore()
        let (_, recorder) = try Self.variedCore(compact: true)
        #expect(recorder.checkpoints >= 2 && recorder.checkpoints == plain.checkpoints)
        #expect(plain.checkpointBytes == 0 && recorder.checkpointBytes > 0)
        let (expected, plainMismatches) = try plain.checkedRecording()
        #expect(plainMismatches == 0)
        let (recording, mismatches) = try recorder.checkedRecording()
        #expect(mismatches == 0)
        #expect(recording.inputs == expected.inputs && recording.inputsBefore == expected.inputsBefore && recording.inputsBefore > 0)
        #expect(try JSON.encode(recording).serialized().utf8.count == JSON.encode(expected).serialized().utf8.count)
        #expect(CoreReplay.run(try RecordReplayTests.roundTrip(recording)).difference == nil)
    }

    /// The inputs a full block keeps as values (those without a packed form: scenes, activities,
    /// notifications, refresh requests here) encoded as the daemon does: the segments hold more inputs in the
    /// same limit (no more checkpoints), the inputs kept end with those a recorder without it keeps, and the
    /// recording has no mismatch and replays.
    @Test func aRecordingFromCompactBlocksKeepsMoreAndReplays() throws {
        let (_, plain) = try Self.variedCore(compact: true)
        let (_, recorder) = try Self.variedCore(compact: true, compactBlocks: true)
        let (expected, _) = try plain.checkedRecording()
        let (recording, mismatches) = try recorder.checkedRecording()
        #expect(mismatches == 0)
        #expect(recording.inputs.count + recording.inputsBefore == expected.inputs.count + expected.inputsBefore)
        #expect(recording.inputs.count > expected.inputs.count, "\(recording.inputs.count) inputs kept against \(expected.inputs.count)")
        #expect(recorder.checkpoints <= plain.checkpoints && recorder.checkpoints >= 1)
        #expect(Array(recording.inputs.suffix(expected.inputs.count)) == expected.inputs)
        #expect(recorder.bytes < 64 << 10)
        #expect(CoreReplay.run(try RecordReplayTests.roundTrip(recording)).difference == nil)
    }
}
