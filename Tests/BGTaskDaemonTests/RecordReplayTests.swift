import BGTaskCore
import BGTaskProtocol
import Testing
@testable import BGTaskDaemon

// SPEC §17: a recording of the core's inputs, written as JSON and read back, replays to the same decisions;
// a recording changed in one decision or one input's time does not, and the replay names that input.
@Suite struct RecordReplayTests {
    static let mail = AppID("org.example.Mail")!
    static let notes = AppID("org.example.Notes")!

    /// A lifecycle: launch, background, the grace window's expiry, suspend, a background task, terminate.
    static func record() -> CoreRecording {
        let start = RecordingStart(lifecycle: .default, journal: JournalBudget.Limits(), denial: DenialBudget.Limits())
        var core = start.makeCore()
        var inputs: [RecordedInput] = []
        var request: UInt64 = 0
        func take(_ input: CoreInput, at us: Int64) -> [CoreAction] {
            let actions = core.handle(input, now: Instant(microseconds: us))
            inputs.append(RecordedInput(monotonicUSec: us, realtimeUSec: 1_700_000_000_000_000 + us, input: input,
                                        decisions: actions.map(DaemonCore.describe)))
            return actions
        }
        func call(_ input: Input, at us: Int64) {
            request += 1
            _ = take(.lifecycle(input, request: RequestID(request), from: nil), at: us)
        }
        _ = take(.lifecycle(.appRegistered(AppManifest(id: mail, lifecycleAware: false)), request: nil, from: nil), at: 0)
        _ = take(.lifecycle(.appRegistered(AppManifest(id: notes)), request: nil, from: nil), at: 0)
        call(.launchRequested(mail, background: false, exclusive: true), at: 1_000)
        _ = take(.lifecycle(.appLaunched(mail, pid: 100), request: nil, from: nil), at: 1_100)
        call(.backgroundRequested(mail), at: 2_000)
        // The grace window of a lifecycle-unaware app ends: its locks are looked at, it is frozen, the
        // freeze is confirmed.
        let grace = LifecycleConfig.default.didEnterBackgroundTimeout
        let expiry = take(.deadlineReached, at: 2_000 + grace.microseconds)
        #expect(expiry.contains { if case .perform(.observeLocks, _, _) = $0 { return true } else { return false } })
        let freeze = take(.lifecycle(.locksObserved(mail, LockObservation()), request: nil, from: nil), at: 2_050 + grace.microseconds)
        #expect(freeze.contains { if case .perform(.freeze, _, _) = $0 { return true } else { return false } })
        _ = take(.lifecycle(.freezeConfirmed(mail), request: nil, from: nil), at: 2_100 + grace.microseconds)
        call(.launchRequested(notes, background: false, exclusive: true), at: 20_000_000)
        _ = take(.lifecycle(.appLaunched(notes, pid: 200), request: nil, from: nil), at: 20_000_100)
        call(.appCheckedIn(notes, connection: ConnectionID(7), pid: 200), at: 20_000_200)
        call(.assertionRequested(notes, connection: ConnectionID(7), name: "sync"), at: 20_001_000)
        call(.terminateRequested(mail), at: 21_000_000)
        call(.terminateRequested(notes), at: 21_000_100)
        return CoreRecording(start: start, inputs: inputs)
    }

    /// Written and read back as the file holds it.
    static func roundTrip(_ r: CoreRecording) throws -> CoreRecording {
        try JSON.parse(JSON.encode(r).serialized()).decode(CoreRecording.self)
    }

    @Test func aRecordingReplaysToTheSameDecisions() throws {
        let recording = try Self.roundTrip(Self.record())
        #expect(try JSON.encode(recording) == JSON.encode(Self.record()))
        #expect(recording.inputsBefore == 0)
        let (decisions, difference) = CoreReplay.run(recording)
        #expect(difference == nil)
        #expect(decisions == recording.inputs.map(\.decisions))
        #expect(decisions.joined().contains { $0.contains("suspend") })
    }

    /// Many lifecycle-unaware apps, round after round: each launched, sent to the background, its grace
    /// window expired, its locks looked at, frozen, confirmed, then terminated and exited. Every input is fed
    /// to `core` and to `recorder` (as `takeCore` does: a full segment begins the next with the core as it
    /// is then), and kept whole in the returned list.
    static func runMany(apps n: Int, rounds: Int, core: inout DaemonCore, recorder: inout InputRecorder) -> [RecordedInput] {
        var all: [RecordedInput] = []
        var t: Int64 = 0
        var request: UInt64 = 0
        func take(_ input: CoreInput) {
            t += 1_000
            let now = Instant(microseconds: t)
            let actions = core.handle(input, now: now)
            let realtime = RealtimeInstant(microsecondsSinceEpoch: 1_700_000_000_000_000 + t)
            all.append(RecordedInput(monotonicUSec: t, realtimeUSec: realtime.microsecondsSinceEpoch, input: input,
                                     decisions: actions.map(DaemonCore.describe)))
            if recorder.append(input, monotonic: now, realtime: realtime, actions: actions) { recorder.startSegment(core) }
        }
        func fact(_ input: Input) { take(.lifecycle(input, request: nil, from: nil)) }
        func call(_ input: Input) {
            request += 1
            take(.lifecycle(input, request: RequestID(request), from: nil))
        }
        let apps = (0..<n).compactMap { AppID("org.example.App\($0)") }
        for app in apps { fact(.appRegistered(AppManifest(id: app, lifecycleAware: false))) }
        for round in 0..<rounds {
            for (k, app) in apps.enumerated() {
                call(.launchRequested(app, background: false, exclusive: false))
                fact(.appLaunched(app, pid: Int32(1_000 + round * n + k)))
                call(.backgroundRequested(app))
            }
            t += LifecycleConfig.default.didEnterBackgroundTimeout.microseconds
            take(.deadlineReached)
            for app in apps { fact(.locksObserved(app, LockObservation())) }
            for app in apps { fact(.freezeConfirmed(app)) }
            for (k, app) in apps.enumerated() {
                call(.terminateRequested(app))
                fact(.processExited(app, pid: Int32(1_000 + round * n + k)))
            }
        }
        return all
    }

    /// `RecordMaxBytes=` is a ring: fed well past it, the recorder keeps the most recent inputs (the last
    /// one taken among them), not the daemon's first; the recording starts from a checkpoint of the core,
    /// and, written as JSON and read back, replays to the decisions the live core took.
    @Test func aRingKeepsTheMostRecentInputsAndReplaysFromItsCheckpoint() throws {
        let start = RecordingStart(lifecycle: .default, journal: JournalBudget.Limits(), denial: DenialBudget.Limits())
        var core = start.makeCore()
        let maxBytes = 64 << 10
        var recorder = InputRecorder(start: core, maxBytes: maxBytes)
        let all = Self.runMany(apps: 20, rounds: 48, core: &core, recorder: &recorder)
        let kept = try Self.roundTrip(recorder.recording())
        #expect(all.count > 3 * kept.inputs.count, "fed well past the limit")
        #expect(kept.inputsBefore > 0 && kept.inputsBefore + kept.inputs.count == all.count)
        #expect(kept.inputs == Array(all.suffix(kept.inputs.count)), "the most recent inputs")
        #expect(kept.inputs.last == all.last)
        // At least half the limit's worth of inputs, at most the limit (and the input that filled it).
        #expect(recorder.bytes >= maxBytes / 2 && recorder.bytes <= maxBytes + 4_096)
        // The checkpoint is the core in mid-life (apps registered, earlier rounds taken), not its start.
        #expect(kept.checkpoint.lifecycle.appIDs.count == 20)
        let (decisions, difference) = CoreReplay.run(kept)
        #expect(difference == nil)
        #expect(decisions == kept.inputs.map(\.decisions))
        #expect(decisions.joined().contains { $0.contains("suspend") })
    }

    /// A checkpoint of a core in mid-life, written and read back, is the same core: its encoding again is
    /// the same, and it takes the same decisions for the same inputs afterwards.
    @Test func aCheckpointReadBackIsTheSameCore() throws {
        let start = RecordingStart(lifecycle: .default, journal: JournalBudget.Limits(), denial: DenialBudget.Limits())
        var core = start.makeCore()
        var recorder = InputRecorder(start: core, maxBytes: 1 << 30)
        _ = Self.runMany(apps: 5, rounds: 2, core: &core, recorder: &recorder)
        // Halfway through a round: apps in the background, deadlines armed.
        let app = try #require(AppID("org.example.App0"))
        _ = core.handle(.lifecycle(.launchRequested(app, background: false, exclusive: false), request: RequestID(900), from: nil), now: Instant(microseconds: 900_000_000))
        _ = core.handle(.lifecycle(.backgroundRequested(app), request: RequestID(901), from: nil), now: Instant(microseconds: 900_000_100))
        let text = try JSON.encode(core).serialized()
        var copy = try JSON.parse(text).decode(DaemonCore.self)
        // Sets and dictionaries are written in their hash order, which differs between two instances: the
        // same members give the same length.
        #expect(try JSON.encode(copy).serialized().utf8.count == text.utf8.count)
        #expect(copy.peekNextDeadline() == core.peekNextDeadline())
        let later = Instant(microseconds: 1_000_000_000)
        #expect(copy.handle(.deadlineReached, now: later) == core.handle(.deadlineReached, now: later))
        // And the same decisions for the rounds that follow.
        var r1 = InputRecorder(start: copy, maxBytes: 1 << 30), r2 = InputRecorder(start: core, maxBytes: 1 << 30)
        let a = Self.runMany(apps: 5, rounds: 2, core: &copy, recorder: &r1)
        let b = Self.runMany(apps: 5, rounds: 2, core: &core, recorder: &r2)
        #expect(a == b)
    }

    /// Not yet wrapped: the recording begins at the start, its checkpoint the core as it was built.
    @Test func aRecordingThatHasNotWrappedBeginsAtTheStart() throws {
        let config = LifecycleConfig.default
        var start = RecordingStart(lifecycle: config, journal: JournalBudget.Limits(), denial: DenialBudget.Limits())
        start.lifecycle.didEnterBackgroundTimeout = .seconds(2)
        var core = start.makeCore()
        var recorder = InputRecorder(start: core, maxBytes: 16 << 20)
        let all = Self.runMany(apps: 3, rounds: 1, core: &core, recorder: &recorder)
        let kept = try Self.roundTrip(recorder.recording())
        #expect(recorder.checkpoints == 0 && kept.inputsBefore == 0)
        #expect(kept.inputs == all)
        #expect(kept.checkpoint.lifecycle.config == start.lifecycle)
        #expect(CoreReplay.run(kept).difference == nil)
    }

    /// `GetRecording`'s parts: each at most 1 MiB, none cut inside a UTF-8 sequence, together the document.
    @Test func thePartsOfALargeRecordingAreTheDocument() throws {
        let start = RecordingStart(lifecycle: .default, journal: JournalBudget.Limits(), denial: DenialBudget.Limits())
        var core = start.makeCore()
        var recorder = InputRecorder(start: core, maxBytes: 64 << 20)
        let payload = Payload(json: "\"" + String(repeating: "é", count: 700_000) + "\"")
        let input = CoreInput.lifecycle(.notificationPosted(name: "big", app: nil, payload: payload), request: RequestID(1), from: nil)
        _ = recorder.append(input, monotonic: .zero, realtime: RealtimeInstant(microsecondsSinceEpoch: 0), actions: core.handle(input, now: .zero))
        let parts = try DaemonService.recordingParts(recorder).get()
        #expect(parts.count == 2)
        #expect(parts.allSatisfy { $0.utf8.count <= DaemonService.recordingPartBytes })
        let decoded = try JSON.parse(parts.joined()).decode(CoreRecording.self)
        #expect(try JSON.encode(decoded) == JSON.encode(recorder.recording()))
    }

    @Test func aChangedDecisionIsNamed() throws {
        var recording = try Self.roundTrip(Self.record())
        let k = try #require(recording.inputs.firstIndex { $0.decisions.contains { $0.contains("grant") } })
        let j = try #require(recording.inputs[k].decisions.firstIndex { $0.contains("grant") })
        recording.inputs[k].decisions[j] = recording.inputs[k].decisions[j].replacingFirst("grant", with: "deny")
        let difference = try #require(CoreReplay.run(recording).difference)
        #expect(difference.index == k)
        #expect(difference.expected != difference.got)
    }

    @Test func aChangedInputTimeIsNamed() throws {
        var recording = try Self.roundTrip(Self.record())
        let k = try #require(recording.inputs.firstIndex { $0.input == .deadlineReached && !$0.decisions.isEmpty })
        recording.inputs[k].monotonicUSec -= 1_000_000
        let difference = try #require(CoreReplay.run(recording).difference)
        #expect(difference.index == k)
        #expect(difference.got.isEmpty)
    }
}

extension String {
    fileprivate func replacingFirst(_ target: String, with replacement: String) -> String {
        var i = startIndex
        while i < endIndex {
            if self[i...].hasPrefix(target) {
                return String(self[..<i]) + replacement + String(self[index(i, offsetBy: target.count)...])
            }
            i = index(after: i)
        }
        return self
    }
}
