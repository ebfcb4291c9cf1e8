import BGTaskCore

/// SPEC §17: the most recent inputs the core took, with both clocks and the actions it returned, kept as
/// values (nothing rendered on the call path: that is done when the recording is asked for), in a ring
/// bounded by `RecordMaxBytes=` (each entry's size in memory estimated). The ring is two segments, each a
/// checkpoint of the core (a copy of the `DaemonCore` value as it was when the segment began: O(1), its
/// buffers shared with the live core until either changes them) and the inputs taken since. When the
/// current segment's inputs reach half the limit, the older segment goes and a new one begins with the core
/// as it is then. So the recording holds the last half to all of the limit's worth of inputs, and replays
/// from the older segment's checkpoint. Used on the daemon's queue.
struct InputRecorder: Sendable {
    private struct Entry: Sendable {
        var input: CoreInput
        var monotonic: Int64
        var realtime: Int64
        /// How many of `actions` (from where the previous entry's end) are this input's.
        var actionCount: Int
    }

    /// A checkpoint and the inputs since.
    private struct Segment: Sendable {
        /// The core before the segment's first input.
        var checkpoint: DaemonCore
        /// Inputs the core took before it.
        var inputsBefore: Int
        var entries: [Entry] = []
        /// Every entry's actions, one after the other: the core's array for one input is not kept (it is
        /// freed, and its memory reused, as without recording).
        var actions: [CoreAction] = []
        /// Estimated bytes of `entries` and `actions`.
        var bytes = 0
    }

    let maxBytes: Int
    private var older: Segment?
    private var current: Segment
    /// Inputs taken since the start (kept or not).
    private(set) var taken = 0
    /// Checkpoints taken since the start (segments begun after the first).
    private(set) var checkpoints = 0

    /// A recorder whose first segment begins with `core`, the core as the daemon built it.
    init(start core: DaemonCore, maxBytes: Int) {
        self.maxBytes = maxBytes
        current = Segment(checkpoint: core, inputsBefore: 0)
    }

    /// Inputs kept.
    var count: Int { (older?.entries.count ?? 0) + current.entries.count }
    /// Estimated bytes kept (the inputs and their actions; the checkpoints are the core's own buffers).
    var bytes: Int { (older?.bytes ?? 0) + current.bytes }
    /// Inputs taken and no longer kept.
    var forgotten: Int { (older ?? current).inputsBefore }

    /// Keeps one input the core took and its actions. True: the current segment is full; call
    /// ``startSegment(_:)`` with the core as it is now (after this input), before it takes the next.
    mutating func append(_ input: CoreInput, monotonic: Instant, realtime: RealtimeInstant, actions: [CoreAction]) -> Bool {
        taken += 1
        current.bytes += Self.estimate(input, actions)
        current.entries.append(Entry(
            input: input, monotonic: monotonic.microseconds, realtime: realtime.microsecondsSinceEpoch, actionCount: actions.count))
        current.actions.append(contentsOf: actions)
        return current.bytes >= maxBytes / 2
    }

    /// Lets the older segment go and begins a new one with `core` (a copy: O(1)) as its checkpoint.
    mutating func startSegment(_ core: DaemonCore) {
        older = current
        current = Segment(checkpoint: core, inputsBefore: taken)
        checkpoints += 1
    }

    /// The recording as the file holds it (the actions rendered now): from the older segment's checkpoint.
    func recording() -> CoreRecording {
        let first = older ?? current
        var inputs: [RecordedInput] = []
        inputs.reserveCapacity(count)
        for s in [older, current] {
            guard let s else { continue }
            var next = 0
            for e in s.entries {
                let decisions = s.actions[next..<next + e.actionCount].map(DaemonCore.describe)
                next += e.actionCount
                inputs.append(RecordedInput(monotonicUSec: e.monotonic, realtimeUSec: e.realtime, input: e.input, decisions: decisions))
            }
        }
        return CoreRecording(checkpoint: first.checkpoint, inputsBefore: first.inputsBefore, inputs: inputs)
    }

    /// An entry's size in memory: the values themselves plus what an input or action typically points to
    /// (names, detail), and the payloads it carries, which may be large (a notification's, up to a message).
    private static func estimate(_ input: CoreInput, _ actions: [CoreAction]) -> Int {
        var bytes = MemoryLayout<Entry>.stride + 64 + actions.count * (MemoryLayout<CoreAction>.stride + 96)
        if case .lifecycle(let fact, _, _) = input {
            switch fact {
            case .notificationPosted(_, _, let payload?), .remoteNotificationReceived(_, let payload?):
                bytes += payload.json.utf8.count
            case .appsRegistered(let manifests):
                bytes += manifests.count * (MemoryLayout<AppManifest>.stride + 32)
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
