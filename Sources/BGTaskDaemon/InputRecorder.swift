import BGTaskCore

/// SPEC §17: the inputs the core took since the start, with both clocks and the actions it returned, kept
/// as values (nothing rendered on the call path: that is done when the recording is asked for). Bounded by
/// `RecordMaxBytes=`, estimated from each entry's size in memory; once reached, later inputs are counted,
/// not kept, so the recording always begins where the core began and stays replayable. Used on the
/// daemon's queue.
struct InputRecorder: Sendable {
    private struct Entry: Sendable {
        var input: CoreInput
        var monotonic: Int64
        var realtime: Int64
        /// How many of `actions` (from where the previous entry's end) are this input's.
        var actionCount: Int
    }

    let start: RecordingStart
    let maxBytes: Int
    private var entries: [Entry] = []
    /// Every entry's actions, one after the other: the core's array for one input is not kept (it is
    /// freed, and its memory reused, as without recording).
    private var actions: [CoreAction] = []
    /// Estimated bytes kept.
    private(set) var bytes = 0
    /// Inputs not kept (the limit was reached).
    private(set) var dropped = 0

    init(start: RecordingStart, maxBytes: Int) {
        self.start = start
        self.maxBytes = maxBytes
    }

    /// Inputs kept.
    var count: Int { entries.count }

    mutating func append(_ input: CoreInput, monotonic: Instant, realtime: RealtimeInstant, actions: [CoreAction]) {
        guard dropped == 0 else {
            dropped += 1
            return
        }
        let size = Self.estimate(input, actions)
        guard bytes + size <= maxBytes else {
            dropped += 1
            return
        }
        bytes += size
        entries.append(Entry(
            input: input, monotonic: monotonic.microseconds, realtime: realtime.microsecondsSinceEpoch, actionCount: actions.count))
        self.actions.append(contentsOf: actions)
    }

    /// The recording as the file holds it (the actions rendered now).
    func recording() -> CoreRecording {
        var inputs: [RecordedInput] = []
        inputs.reserveCapacity(entries.count)
        var next = 0
        for e in entries {
            let decisions = actions[next..<next + e.actionCount].map(DaemonCore.describe)
            next += e.actionCount
            inputs.append(RecordedInput(monotonicUSec: e.monotonic, realtimeUSec: e.realtime, input: e.input, decisions: decisions))
        }
        return CoreRecording(start: start, inputs: inputs, dropped: dropped)
    }

    /// An entry's size in memory: the values themselves plus what an input or action typically points to
    /// (names, detail), and the payloads it carries, which may be large (a notification's, up to a message).
    private static func estimate(_ input: CoreInput, _ actions: [CoreAction]) -> Int {
        var bytes = MemoryLayout<Entry>.stride + 64 + actions.count * (MemoryLayout<CoreAction>.stride + 96)
        if case .lifecycle(let fact, _, _) = input {
            switch fact {
            case .notificationPosted(_, _, let payload?), .remoteNotificationReceived(_, let payload?):
                bytes += payload.json.utf8.count
            default:
                break
            }
        }
        if case .remoteNotificationRequested(_, let payload?, _, _) = input { bytes += payload.json.utf8.count }
        for case .perform(.deliver(_, _, let event), _, _) in actions {
            bytes += event.payload?.json.utf8.count ?? 0
        }
        return bytes
    }
}
