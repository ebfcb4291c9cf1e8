import BGTaskCore
import BGTaskDaemon
import BGTaskProtocol

/// SPEC §17, what the input recording costs per input, without the socket (docs/performance.md, row 1r): one
/// app in the foreground, `pairs` Begin/End calls fed to the core, and each input with its actions to an
/// `InputRecorder` of `maxBytes` (none when `record` is false), as the daemon's `takeCore` does. Emits the
/// time per input; under `valgrind --tool=callgrind` the instruction counts of a run with and one without
/// the recorder give the recorder's own, stable where the time is not; `segment_inputs`, how many Begin/End
/// inputs fill a segment (one checkpoint each). Then times what `GetRecording`
/// does off the daemon's queue: the replay, check and rendering, and the JSON encoding. `busyApps`: that many
/// other apps in the foreground first, each holding one background task (live work, SPEC §14), so that each
/// Begin/End of the measured app adds it to or takes it from the apps holding the idle inhibitor among them.
func recordLoop(pairs: Int, maxBytes: Int, record: Bool, busyApps: Int = 0, compactBlocks: Bool = true, render: Bool = true) {
    guard let app = AppID("org.bench.R00") else { fail("bad app ID") }
    var core = RecordingStart(lifecycle: .default, journal: JournalBudget.Limits(), denial: DenialBudget.Limits()).makeCore()
    var t: Int64 = 0
    var request: UInt64 = 0
    func take(_ input: Input) -> [CoreAction] {
        t += 20
        request += 1
        return core.handle(.lifecycle(input, request: RequestID(request), from: nil), now: Instant(microseconds: t))
    }
    _ = take(.appRegistered(AppManifest(id: app)))
    _ = take(.launchRequested(app, background: false, exclusive: false))
    _ = take(.appLaunched(app, pid: 100))
    _ = take(.appCheckedIn(app, connection: ConnectionID(7), pid: 100))
    let busy = (0..<busyApps).compactMap { AppID("org.bench.B\($0)") }
    if !busy.isEmpty { _ = take(.appsRegistered(busy.map { AppManifest(id: $0) })) }
    for (k, other) in busy.enumerated() {
        let connection = ConnectionID(UInt64(1_000 + k))
        _ = take(.launchRequested(other, background: false, exclusive: false))
        _ = take(.appLaunched(other, pid: Int32(1_000 + k)))
        _ = take(.appCheckedIn(other, connection: connection, pid: Int32(1_000 + k)))
        _ = take(.assertionRequested(other, connection: connection, name: "held"))
    }
    var recorder = record ? InputRecorder(start: core, maxBytes: maxBytes) : nil
    var actions = 0
    var taken = 0
    var segmentInputs = 0  // inputs the first segment held when it was full (0: none filled)
    var compactNS: Int64 = 0, compactedInputs = 0, compactBytes = 0
    let origin = CallOrigin(connection: ConnectionID(7), caller: DenialBudget.Caller(uid: 0, pid: 100))
    func feed(_ input: Input) -> [CoreAction] {
        t += 20
        request += 1
        let i = CoreInput.lifecycle(input, request: RequestID(request), from: origin)
        let now = Instant(microseconds: t), wall = RealtimeInstant(microsecondsSinceEpoch: 1_700_000_000_000_000 + t)
        let a = core.handle(i, now: now, wall: wall)
        taken += 1
        if recorder?.append(i, monotonic: now, realtime: wall, actions: a) == true {
            recorder?.startSegment(core)
            if segmentInputs == 0 { segmentInputs = taken }
        }
        // What the daemon does off its queue with each full block's inputs kept as values (timed apart).
        if compactBlocks, recorder?.hasBlockToCompact == true, let (block, entries) = recorder?.blockToCompact {
            let c0 = monoNS()
            guard let bytes = try? InputRecorder.encode(block: entries) else { fail("a block did not encode") }
            compactNS += monoNS() - c0
            compactedInputs += entries.count
            compactBytes += bytes.count
            recorder?.compacted(block: block, bytes)
        }
        actions += a.count
        return a
    }
    let t0 = monoNS()
    for _ in 0..<pairs {
        var task: TaskID?
        for case .perform(.reply(.taskID(let id), _), _, _) in feed(.assertionRequested(app, connection: ConnectionID(7), name: "bench")) {
            task = id
        }
        if let task { _ = feed(.assertionEndRequested(app, task)) }
    }
    let elapsed = monoNS() - t0
    // What `GetRecording` does off the queue: the kept inputs replayed from the checkpoint, checked and
    // rendered, then the document encoded.
    let r0 = monoNS()
    let checked = render ? try? recorder?.checkedRecording() : nil
    let r1 = monoNS()
    let documentBytes = (try? checked.map { try JSON.encode($0.recording).serialized().utf8.count }) ?? nil
    let r2 = monoNS()
    emit(["ns_per_input": .double(Double(elapsed) / Double(2 * pairs)), "actions": .int(Int64(actions)),
          "kept": .int(Int64(recorder?.count ?? 0)), "bytes": .int(Int64(recorder?.bytes ?? 0)),
          "mismatches": .int(Int64(checked?.mismatches ?? 0)), "render_ms": .double(Double(r1 - r0) / 1e6),
          "encode_ms": .double(Double(r2 - r1) / 1e6), "document_bytes": .int(Int64(documentBytes ?? 0)),
          "segment_inputs": .int(Int64(segmentInputs)),
          "bytes_per_kept_input": .double(Double(recorder?.bytes ?? 0) / Double(max(1, recorder?.count ?? 0))),
          "others_encoded": .int(Int64(compactedInputs)),
          "others_encode_ns_each": .double(compactedInputs == 0 ? 0 : Double(compactNS) / Double(compactedInputs)),
          "others_bytes_each": .double(compactedInputs == 0 ? 0 : Double(compactBytes) / Double(compactedInputs))])
}
