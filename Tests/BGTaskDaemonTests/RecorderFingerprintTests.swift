import BGTaskCore
import BGTaskProtocol
import Testing
@testable import BGTaskDaemon

// SPEC §17: the recorder keeps each input and a fingerprint of its actions, not the actions; the recording
// renders the decisions by replaying the kept inputs from the checkpoint and checks each against its
// fingerprint. A mismatch is stated in the file (the input's decisions say they are not known) and a replay
// of the file stops there, naming it.
@Suite struct RecorderFingerprintTests {
    static let app = AppID("org.example.Bench")!

    /// A core with one app in the foreground (as bench row 1r), and `pairs` Begin/End calls fed to it and
    /// to `recorder`.
    static func pairs(_ n: Int, core: inout DaemonCore, recorder: inout InputRecorder, from t: inout Int64) {
        var request: UInt64 = 1_000
        func take(_ input: Input) {
            t += 50
            request += 1
            let i = CoreInput.lifecycle(input, request: RequestID(request), from: nil)
            let now = Instant(microseconds: t)
            let wall = RealtimeInstant(microsecondsSinceEpoch: 1_700_000_000_000_000 + t)
            let actions = core.handle(i, now: now, wall: wall)
            if recorder.append(i, monotonic: now, realtime: wall, actions: actions) { recorder.startSegment(core) }
        }
        for k in 0..<n {
            take(.assertionRequested(app, connection: ConnectionID(7), name: "bench"))
            take(.assertionEndRequested(app, TaskID(UInt64(k + 1))))
        }
    }

    static func foreground() -> (DaemonCore, Int64) {
        var core = DaemonCore(lifecycle: .default, journal: JournalBudget.Limits(), denial: DenialBudget.Limits())
        _ = core.handle(.lifecycle(.appRegistered(AppManifest(id: app)), request: nil, from: nil), now: .zero)
        _ = core.handle(.lifecycle(.launchRequested(app, background: false, exclusive: false), request: RequestID(1), from: nil),
                        now: Instant(microseconds: 10))
        _ = core.handle(.lifecycle(.appLaunched(app, pid: 100), request: nil, from: nil), now: Instant(microseconds: 20))
        _ = core.handle(.lifecycle(.appCheckedIn(app, connection: ConnectionID(7), pid: 100), request: RequestID(2), from: nil),
                        now: Instant(microseconds: 30))
        return (core, 100)
    }

    /// What a kept Begin/End pair costs the budget (and so the memory the recording takes, which the budget
    /// counts): the two inputs and their fingerprints, packed (InputRecorder+Packed.swift), not their four
    /// actions (224 bytes each, with their strings: ~1.3 KB a pair, ~650 bytes an input, when they were
    /// kept; ~330 bytes an input as a value with its fingerprint).
    @Test func aBeginEndPairKeepsTheInputsNotTheActions() {
        var (core, t) = Self.foreground()
        let maxBytes = 4 << 20
        var recorder = InputRecorder(start: core, maxBytes: maxBytes)
        while recorder.checkpoints == 0 { Self.pairs(1, core: &core, recorder: &recorder, from: &t) }
        // The first segment just filled half the budget: the inputs it holds are all there is.
        let perInput = maxBytes / 2 / recorder.count
        #expect(perInput <= 64, "\(perInput) bytes per input kept (\(recorder.count) inputs in half of \(maxBytes) B)")
    }

    /// The recording's decisions are those the live core took (its fingerprints match), and it replays equal.
    @Test func theRenderedDecisionsAreTheLiveOnes() throws {
        var (core, t) = Self.foreground()
        var recorder = InputRecorder(start: core, maxBytes: 1 << 20)
        var live: [[String]] = []
        var request: UInt64 = 5_000
        for k in 0..<50 {
            for input in [Input.assertionRequested(Self.app, connection: ConnectionID(7), name: "sync"),
                          .assertionEndRequested(Self.app, TaskID(UInt64(k + 1)))] {
                t += 50
                request += 1
                let i = CoreInput.lifecycle(input, request: RequestID(request), from: nil)
                let wall = RealtimeInstant(microsecondsSinceEpoch: 1_700_000_000_000_000 + t)
                let actions = core.handle(i, now: Instant(microseconds: t), wall: wall)
                live.append(actions.map(DaemonCore.describe))
                _ = recorder.append(i, monotonic: Instant(microseconds: t), realtime: wall, actions: actions)
            }
        }
        let (recording, mismatches) = try recorder.checkedRecording()
        #expect(mismatches == 0)
        #expect(recording.inputs.map(\.decisions) == live)
        #expect(recording.inputsNotKnown.isEmpty)
        #expect(CoreReplay.run(try RecordReplayTests.roundTrip(recording)).difference == nil)
    }

    /// The live core answered an input otherwise than the replay does (here: an action it never returns,
    /// given to the recorder as if it had): the file does not hide it. That input's decisions say they are
    /// not known, the ones before and after are rendered and checked as usual, and the replay of the file
    /// stops at it, naming it.
    @Test func aFingerprintMismatchIsStatedAndTheReplayNamesIt() throws {
        var (core, t) = Self.foreground()
        var recorder = InputRecorder(start: core, maxBytes: 1 << 20)
        Self.pairs(3, core: &core, recorder: &recorder, from: &t)
        let input = CoreInput.lifecycle(.assertionRequested(Self.app, connection: ConnectionID(7), name: "odd"), request: RequestID(9), from: nil)
        let wall = RealtimeInstant(microsecondsSinceEpoch: 1_700_000_000_000_000 + t + 50)
        let actions = core.handle(input, now: Instant(microseconds: t + 50), wall: wall)
        _ = recorder.append(input, monotonic: Instant(microseconds: t + 50), realtime: wall, actions: actions + [.releasePausedConnections])
        t += 50
        Self.pairs(2, core: &core, recorder: &recorder, from: &t)

        let (recording, mismatches) = try recorder.checkedRecording()
        #expect(mismatches == 1)
        #expect(recording.inputsNotKnown == [6])
        let line = try #require(recording.inputs[6].decisions.first)
        #expect(recording.inputs[6].decisions.count == 1)
        #expect(line == CoreRecording.notKnown(liveActions: actions.count + 1, replayedActions: actions.count))
        #expect(recording.inputs[5].decisions.allSatisfy { !$0.hasPrefix(CoreRecording.notKnownPrefix) })
        let difference = try #require(CoreReplay.run(try RecordReplayTests.roundTrip(recording)).difference)
        #expect(difference.index == 6)
        #expect(difference.expected == [line])
        #expect(difference.got == actions.map(DaemonCore.describe))
    }

    /// The fingerprint reads these enums' one-byte tags (InputRecorder+Fingerprint.swift).
    @Test func theEnumsTheFingerprintReadsAreOneByte() {
        #expect(MemoryLayout<DecisionKind>.size == 1 && MemoryLayout<Reason>.size == 1)
        #expect(MemoryLayout<AppState>.size == 1 && MemoryLayout<AppState?>.size == 1)
        #expect(MemoryLayout<Severity>.size == 1 && MemoryLayout<CoreError>.size == 1)
        #expect(MemoryLayout<LaunchReason>.size == 1 && MemoryLayout<LifecycleEventKind>.size == 1)
    }

    /// What the fingerprint tells apart: a decision of another kind, reason, state or task, another reply,
    /// another request answered, one action more or fewer.
    @Test func anotherDecisionHasAnotherFingerprint() throws {
        var (core, _) = Self.foreground()
        let actions = core.handle(
            .lifecycle(.assertionRequested(Self.app, connection: ConnectionID(7), name: "sync"), request: RequestID(9), from: nil),
            now: Instant(microseconds: 1_000))
        let d = try #require(actions.lazy.compactMap(\.decision).first)
        func fp(_ d2: Decision) -> Int { InputRecorder.fingerprint([.perform(.record(d2), journaled: true, peer: nil)]) }
        var other = d
        other.kind = try #require(DecisionKind.allCases.first { $0 != d.kind })
        #expect(fp(other) != fp(d))
        other = d
        other.reason = try #require(Reason.allCases.first { $0 != d.reason })
        #expect(fp(other) != fp(d))
        other = d
        other.state = AppState.allCases.first { $0 != d.state }
        #expect(fp(other) != fp(d))
        other = d
        other.taskID = TaskID(rawValue: (d.taskID?.rawValue ?? 0) + 1)
        #expect(fp(other) != fp(d))
        #expect(fp(d) == fp(d))
        func reply(_ r: Reply, _ to: UInt64) -> Int { InputRecorder.fingerprint([.perform(.reply(r, to: RequestID(to)), journaled: false, peer: nil)]) }
        #expect(reply(.taskID(TaskID(1)), 9) != reply(.taskID(TaskID(2)), 9))
        #expect(reply(.ok, 9) != reply(.ok, 10))
        #expect(reply(.ok, 9) != reply(.failure(.noSuchApp), 9))
        #expect(InputRecorder.fingerprint(actions) != InputRecorder.fingerprint(Array(actions.dropLast())))
        #expect(InputRecorder.fingerprint(actions) == InputRecorder.fingerprint(actions))
    }
}
