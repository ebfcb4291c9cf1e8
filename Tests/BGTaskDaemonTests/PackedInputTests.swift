import BGTaskCore
import BGTaskProtocol
import Testing
@testable import BGTaskDaemon

// SPEC §17: the ring keeps its inputs packed (InputRecorder+Packed.swift). Every packed case reads back as it
// was taken, beside the inputs kept as values, in order; a damaged block is an error, not a trap; and the
// ring holds several times as many of the common inputs as it did as values in the same limit.
@Suite struct PackedInputTests {
    static let app = AppID("org.example.Packed")!
    static let long = AppID(String(repeating: "a.", count: 127) + "z")!

    /// Every input with a packed form, with its edge values (optional members absent and present, the
    /// largest and negative numbers, empty and non-ASCII strings), and inputs without one among them.
    static var inputs: [CoreInput] {
        let origin = CallOrigin(connection: ConnectionID(.max), caller: DenialBudget.Caller(uid: .max, pid: .min))
        let small = CallOrigin(connection: ConnectionID(0), caller: DenialBudget.Caller(uid: 0, pid: 1))
        func call(_ i: Input, _ n: UInt64?, _ from: CallOrigin?) -> CoreInput { .lifecycle(i, request: n.map { RequestID($0) }, from: from) }
        let caller = Caller(pid: -1, uid: .max, gid: 0)
        var all: [CoreInput] = [
            call(.assertionRequested(app, connection: ConnectionID(7), name: "sync"), 1, small),
            call(.assertionRequested(long, connection: ConnectionID(.max), name: nil), .max, origin),
            call(.assertionRequested(app, connection: ConnectionID(7), name: ""), nil, nil),
            call(.assertionRequested(app, connection: ConnectionID(7), name: "é\u{0}😀 \(String(repeating: "x", count: 300))"), 0, small),
            call(.assertionEndRequested(app, TaskID(.max)), 2, small),
            call(.assertionEndRequested(app, TaskID(0)), nil, origin),
            call(.foregroundRequested(app, exclusive: true), 3, nil),
            call(.foregroundRequested(long, exclusive: false), nil, small),
            call(.backgroundRequested(app), 4, small),
            call(.launchRequested(app, background: true, exclusive: false), 5, small),
            call(.launchRequested(app, background: false, exclusive: true), 6, nil),
            call(.appLaunched(app, pid: .max), nil, nil),
            call(.appLaunched(app, pid: .min), nil, nil),
            call(.appCheckedIn(app, connection: ConnectionID(9), pid: nil), 7, small),
            call(.appCheckedIn(app, connection: ConnectionID(9), pid: 42, inAdoptedCgroup: true), 8, origin),
            call(.connectionClosed(ConnectionID(.max)), nil, nil),
            call(.processExited(app, pid: nil), nil, nil),
            call(.processExited(app, pid: -5), nil, nil),
            call(.freezeConfirmed(app), nil, nil),
            call(.deadlineReached, nil, nil),
            call(.eventAcknowledged(EventID(.max), caller: caller), 9, small),
            call(.eventAcknowledged(EventID(1)), 10, nil),
            call(.locksObserved(app, LockObservation(held: 3)), nil, nil),
            call(.locksObserved(app, LockObservation()), nil, nil),
            call(.appCallReceived(app, method: "io.bgtaskd.App.BeginBackgroundTask", caller: caller), 11, small),
            call(.terminateRequested(app), 12, origin),
            .deadlineReached,
            .wallDeadlineReached,
            .freezeStarted(app, partsAwaited: 0, own: .frozen),
            .freezeStarted(long, partsAwaited: .max, own: .failed("write cgroup.freeze: EBUSY é")),
            .freezeChecked(app, .notYet),
            .freezeChecked(app, .failed("")),
            .freezePartDone(app),
        ]
        // Without a packed form: kept as values, in their place.
        let others: [CoreInput] = [
            call(.locksObserved(app, LockObservation(held: 1, contended: [LockContention(kind: "FLOCK", device: "00:1a", inode: 7, holder: 3, waiter: 4)])), nil, nil),
            call(.notificationPosted(name: "n", app: app, payload: Payload(json: "{\"k\":1}")), 13, small),
            call(.stopRequested, nil, nil),
            .stopping,
            .budgetsConfigured(journal: JournalBudget.Limits(), denial: DenialBudget.Limits()),
        ]
        for (k, o) in others.enumerated() { all.insert(o, at: min(all.count, 1 + k * 7)) }
        return all
    }

    /// Entries for `inputs`, with times that go back as well as forward (a test's clock may) and wall
    /// clocks stepped, fingerprints over all their bits.
    static func entries(_ inputs: [CoreInput]) -> [InputRecorder.Entry] {
        var monotonic: Int64 = 1_000
        return inputs.enumerated().map { k, input in
            monotonic += k % 5 == 4 ? -700 : Int64(k * k * 997)
            let realtime = k % 3 == 0 ? monotonic + 1_700_000_000_000_000 : .min + monotonic
            return InputRecorder.Entry(input: input, monotonic: monotonic, realtime: realtime,
                                       fingerprint: k % 2 == 0 ? .min + k : .max - k * 0x9E37_79B9, actionCount: k)
        }
    }

    @Test func everyPackedCaseReadsBackInItsPlace() throws {
        let entries = Self.entries(Self.inputs)
        var block = InputRecorder.Block(capacity: 1 << 16)
        for e in entries { block.append(e, indirect: 64) }
        #expect(block.count == entries.count)
        #expect(try block.entries() == entries)
        // Five kept as values; the others encoded as the daemon does once the block is full.
        let others = try #require(block.liveOthers)
        #expect(others.count == 5)
        let before = block.memory
        block.compactedOthers(try InputRecorder.encode(block: others))
        #expect(block.liveOthers == nil && block.memory < before)
        #expect(try block.entries() == entries)
    }

    /// The inputs whose payloads are boxed (`indirect` cases, a decision's copy-on-write fields) are kept as
    /// values, encoded as the daemon does once the block is full, and read back equal.
    @Test func boxedPayloadsReadBackFromAnEncodedBlock() throws {
        var scene = Decision(
            kind: .grant, reason: .appRequest, app: Self.app, taskID: TaskID(3), taskName: "sync",
            remaining: .seconds(30), pid: 12, detail: .note("granted"))
        scene.scene = SceneID("main")!
        let inputs: [CoreInput] = [
            .lifecycle(.configurationChanged(LifecycleConfig(backgroundTimeBudget: .seconds(45))), request: nil, from: nil),
            .lifecycle(.continuedTaskRequested(Self.app, connection: ConnectionID(4),
                                               ContinuedTaskRequest(identifier: "export", title: "Exporting", totalUnits: 100)),
                       request: RequestID(5), from: nil),
            .decisionTaken(scene, from: nil),
            .lifecycle(.assertionEndRequested(Self.app, TaskID(3)), request: RequestID(6), from: nil),
        ]
        let entries = Self.entries(inputs)
        var block = InputRecorder.Block(capacity: 1 << 16)
        for e in entries { block.append(e, indirect: 64) }
        let others = try #require(block.liveOthers)
        #expect(others.count == 3)
        block.compactedOthers(try InputRecorder.encode(block: others))
        #expect(try block.entries() == entries)
    }

    /// A block cut short, or with a byte changed to a tag no input has, is an error when read back.
    @Test func aDamagedBlockIsAnError() throws {
        var block = InputRecorder.Block(capacity: 1 << 12)
        for e in Self.entries(Array(Self.inputs.prefix(6))) { block.append(e, indirect: 64) }
        var bytes = block.packedBytes
        for cut in [1, 2, bytes.count / 2, bytes.count - 1] {
            #expect(throws: (any Error).self) { try InputRecorder.Block.unpack(Array(bytes.prefix(cut)), count: block.count, others: []) }
        }
        bytes[0] = 200
        #expect(throws: (any Error).self) { try InputRecorder.Block.unpack(bytes, count: block.count, others: []) }
        // An entry naming "the app before" (an app written again is one byte) with none before it.
        var w = Writer(bytes: [], context: PackContext(app: Self.app))
        w.byte(36)  // freezePartDone
        w.signed(1)
        w.signed(0)
        w.fixed(0)
        w.unsigned(0)
        w.app(Self.app)
        #expect(w.bytes.count == 13)
        #expect(throws: (any Error).self) { try InputRecorder.Block.unpack(w.bytes, count: 1, others: []) }
    }

    /// An app named again by the next packed entry is one byte (a 0: no app ID is empty); another app in
    /// between is written whole, and so is the first after it; an entry kept as a value between two that
    /// name the same app changes nothing. Every sequence reads back as it was.
    @Test func anAppNamedAgainIsOneByte() throws {
        let other = AppID("org.example.Other")!
        var w = Writer(bytes: [])
        var sizes: [Int] = []
        for app in [Self.app, Self.app, other, Self.app, Self.app] {
            let before = w.bytes.count
            w.app(app)
            sizes.append(w.bytes.count - before)
        }
        let whole = Self.app.rawValue.utf8.count + 1
        #expect(sizes == [whole, 1, other.rawValue.utf8.count + 1, whole, 1])

        let notice = CoreInput.lifecycle(.stopRequested, request: nil, from: nil)
        let sequence: [CoreInput] = [
            .freezePartDone(Self.app), .freezePartDone(Self.app), notice, .freezePartDone(Self.app),
            .freezePartDone(other), .lifecycle(.backgroundRequested(other), request: RequestID(1), from: nil),
            .freezeChecked(Self.app, .frozen), .deadlineReached, .freezePartDone(Self.app),
        ]
        var block = InputRecorder.Block(capacity: 1 << 12)
        let entries = Self.entries(sequence)
        for e in entries { block.append(e, indirect: 64) }
        #expect(try block.entries() == entries)
    }

    /// A block is sealed before an entry that might not fit in what it has left, so that no block's bytes
    /// grow past their capacity (an array doubles); an entry larger than a whole block gets a block of its
    /// own. Every input reads back.
    @Test func aBlockIsSealedBeforeAnEntryThatMightNotFit() throws {
        let maxBytes = 64 << 10  // blocks of 4 KiB
        let core = RecordingStart(lifecycle: .default, journal: JournalBudget.Limits(), denial: DenialBudget.Limits()).makeCore()
        var recorder = InputRecorder(start: core, maxBytes: maxBytes)
        var taken: [CoreInput] = []
        for k in 0..<400 {
            let name = k % 9 == 8 ? String(repeating: "n", count: k == 80 ? 6_000 : 900) : "sync"
            let input = CoreInput.lifecycle(.assertionRequested(Self.app, connection: ConnectionID(3), name: name),
                                            request: RequestID(UInt64(k)), from: nil)
            taken.append(input)
            let t = Int64(k) * 40
            if recorder.append(input, monotonic: Instant(microseconds: t), realtime: RealtimeInstant(microsecondsSinceEpoch: t), actions: []) {
                recorder.startSegment(core)
            }
        }
        let blocks = (recorder.older?.blocks ?? []) + recorder.current.blocks
        #expect(blocks.count >= 8)
        let grown = blocks.filter { $0.packedBytes.capacity >= 2 * 4_096 }  // a doubled array (malloc may round 4 KiB up a little)
        #expect(grown.count <= 1 && grown.allSatisfy { $0.count == 1 }, "only the 6,000-byte name's block, alone in it")
        let kept = try recorder.checkedRecording().recording.inputs.map(\.input)
        #expect(kept == Array(taken.suffix(kept.count)) && !kept.isEmpty)
    }

    /// The calls apps make most, Begin/End pairs from many apps, fill the limit with several times as many
    /// inputs as they did kept as values (152 bytes each and the ~64 they point to), and read back.
    @Test func theRingHoldsSeveralTimesAsManyCommonInputs() throws {
        let maxBytes = 1 << 20
        let core = RecordingStart(lifecycle: .default, journal: JournalBudget.Limits(), denial: DenialBudget.Limits()).makeCore()
        var recorder = InputRecorder(start: core, maxBytes: maxBytes)
        var taken: [CoreInput] = []
        var t: Int64 = 0
        while true {
            let k = taken.count
            let app = AppID("org.example.Packed\(k % 1_000)")!
            let from = CallOrigin(connection: ConnectionID(UInt64(k % 1_000)), caller: DenialBudget.Caller(uid: 1_000, pid: Int32(5_000 + k % 1_000)))
            let input: CoreInput = k % 2 == 0
                ? .lifecycle(.assertionRequested(app, connection: from.connection, name: "sync"), request: RequestID(UInt64(k)), from: from)
                : .lifecycle(.assertionEndRequested(app, TaskID(UInt64(k))), request: RequestID(UInt64(k)), from: from)
            t += 25
            taken.append(input)
            if recorder.append(input, monotonic: Instant(microseconds: t), realtime: RealtimeInstant(microsecondsSinceEpoch: 1_700_000_000_000_000 + t), actions: []) {
                break
            }
        }
        let asValues = maxBytes / 2 / (MemoryLayout<InputRecorder.Entry>.stride + InputRecorder.inputIndirect)
        #expect(taken.count > 4 * asValues, "\(taken.count) inputs fill half of \(maxBytes) bytes; as values \(asValues)")
        #expect(!recorder.hasBlockToCompact)
        recorder.startSegment(core)
        let kept = try recorder.checkedRecording().recording.inputs.map(\.input)
        #expect(kept == taken)
    }

    /// What the entries before named takes fewer bytes named again: the caller of a connection (its slot's
    /// number: one byte), the task name (one byte), the request (its difference), the connection of a Begin
    /// that is the caller's own (one byte). Origins whose connections share a slot (1 and 17), names and
    /// connections that change, and requests that go back all read back as they were; a remembered origin
    /// that was never written is an error.
    @Test func whatTheEntriesBeforeNamedIsWrittenShorter() throws {
        func origin(_ c: UInt64, pid: Int32 = 4_000) -> CallOrigin {
            CallOrigin(connection: ConnectionID(c), caller: DenialBudget.Caller(uid: 1_000, pid: pid))
        }
        func begin(_ app: String, _ o: CallOrigin, _ request: UInt64, name: String? = "sync", connection: UInt64? = nil) -> CoreInput {
            .lifecycle(
                .assertionRequested(AppID(app)!, connection: ConnectionID(connection ?? o.connection.rawValue), name: name),
                request: RequestID(request), from: o)
        }
        var block = InputRecorder.Block(capacity: 1 << 16)
        var sizes: [Int] = []
        func add(_ input: CoreInput) {
            let before = block.packedBytes.count
            block.append(InputRecorder.Entry(input: input, monotonic: 1, realtime: 2, fingerprint: 3, actionCount: 1), indirect: 64)
            sizes.append(block.packedBytes.count - before)
        }
        let sequence: [CoreInput] = [
            begin("org.example.A", origin(1), 1_000_000),
            begin("org.example.B", origin(1), 1_000_001),  // same caller, name; the next request
            begin("org.example.B", origin(17), 1_000_002),  // slot 1 again, another connection: written whole
            begin("org.example.B", origin(1), 1_000_003),  // and back
            begin("org.example.B", origin(1, pid: 4_001), 999_000, name: "other", connection: 5),  // all changed
            begin("org.example.B", origin(1, pid: 4_001), 999_001, name: nil),
            begin("org.example.B", origin(1, pid: 4_001), 999_002, name: "other"),
        ]
        for input in sequence { add(input) }
        let appBytes = "org.example.B".utf8.count + 1
        // tag, two clocks, fingerprint (8), action count, flags, request, origin slot, app, connection, name.
        #expect(sizes[1] == 1 + 2 + 8 + 1 + 1 + 1 + 1 + appBytes + 1 + 1, "\(sizes)")
        // The app again: one byte; the caller again: one byte, where 17 and 1 taking turns in slot 1 are whole.
        #expect(sizes[5] == sizes[1] - appBytes + 1 && sizes[6] == sizes[5], "\(sizes)")
        #expect(sizes[2] == sizes[3] && sizes[3] >= sizes[5] + 4 && sizes[4] > sizes[5] + 8, "\(sizes)")
        let back = try InputRecorder.Block.unpack(block.packedBytes, count: block.count, others: []).map(\.input)
        #expect(back == sequence)

        // A remembered origin never written: flags 7 (request, origin, remembered) and slot 3.
        var w = Writer(bytes: [])
        w.byte(4)  // backgroundRequested
        w.signed(1)
        w.signed(0)
        w.fixed(0)
        w.unsigned(0)
        w.byte(7)
        w.signed(1)
        w.byte(3)
        w.app(Self.app)
        #expect(throws: (any Error).self) { try InputRecorder.Block.unpack(w.bytes, count: 1, others: []) }
        // The same with the origin written first reads back.
        var ok = Writer(bytes: [])
        for (k, flags) in [(0, UInt8(3)), (1, UInt8(7))] {
            ok.byte(4)
            ok.signed(1)
            ok.signed(0)
            ok.fixed(0)
            ok.unsigned(0)
            ok.byte(flags)
            ok.signed(1)
            if k == 0 {
                ok.unsigned(3)
                ok.unsigned(1_000)
                ok.signed(4_000)
            } else {
                ok.byte(3)
            }
            ok.app(Self.app)
        }
        let two = try InputRecorder.Block.unpack(ok.bytes, count: 2, others: []).map(\.input)
        #expect(two == [CoreInput.lifecycle(.backgroundRequested(Self.app), request: RequestID(1), from: origin(3)),
                        .lifecycle(.backgroundRequested(Self.app), request: RequestID(2), from: origin(3))])
    }
}
