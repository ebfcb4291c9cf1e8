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
        return CoreRecording(start: start, inputs: inputs, dropped: 0)
    }

    /// Written and read back as the file holds it.
    static func roundTrip(_ r: CoreRecording) throws -> CoreRecording {
        try JSON.parse(JSON.encode(r).serialized()).decode(CoreRecording.self)
    }

    @Test func aRecordingReplaysToTheSameDecisions() throws {
        let recording = try Self.roundTrip(Self.record())
        #expect(recording == Self.record())
        let (decisions, difference) = CoreReplay.run(recording)
        #expect(difference == nil)
        #expect(decisions == recording.inputs.map(\.decisions))
        #expect(decisions.joined().contains { $0.contains("suspend") })
    }

    /// `RecordMaxBytes=`: past it, inputs are counted, not kept; what is kept begins at the start, so it
    /// still replays to the same decisions.
    @Test func aFullRecorderKeepsTheBeginningAndCountsTheRest() throws {
        let full = Self.record()
        var recorder = InputRecorder(start: full.start, maxBytes: 2_000)
        var core = full.start.makeCore()
        for r in full.inputs {
            let t = Instant(microseconds: r.monotonicUSec)
            recorder.append(r.input, monotonic: t, realtime: RealtimeInstant(microsecondsSinceEpoch: r.realtimeUSec),
                            actions: core.handle(r.input, now: t))
        }
        let kept = try Self.roundTrip(recorder.recording())
        #expect(recorder.bytes <= 2_000)
        #expect(kept.inputs.count > 0 && kept.inputs.count < full.inputs.count)
        #expect(kept.dropped == full.inputs.count - kept.inputs.count)
        #expect(kept.inputs == Array(full.inputs.prefix(kept.inputs.count)))
        #expect(CoreReplay.run(kept).difference == nil)
    }

    /// `GetRecording`'s parts: each at most 1 MiB, none cut inside a UTF-8 sequence, together the document.
    @Test func thePartsOfALargeRecordingAreTheDocument() throws {
        let start = RecordingStart(lifecycle: .default, journal: JournalBudget.Limits(), denial: DenialBudget.Limits())
        var recorder = InputRecorder(start: start, maxBytes: 64 << 20)
        var core = start.makeCore()
        let payload = Payload(json: "\"" + String(repeating: "é", count: 700_000) + "\"")
        let input = CoreInput.lifecycle(.notificationPosted(name: "big", app: nil, payload: payload), request: RequestID(1), from: nil)
        recorder.append(input, monotonic: .zero, realtime: RealtimeInstant(microsecondsSinceEpoch: 0), actions: core.handle(input, now: .zero))
        let parts = try DaemonService.recordingParts(recorder).get()
        #expect(parts.count == 2)
        #expect(parts.allSatisfy { $0.utf8.count <= DaemonService.recordingPartBytes })
        let decoded = try JSON.parse(parts.joined()).decode(CoreRecording.self)
        #expect(decoded == recorder.recording())
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
