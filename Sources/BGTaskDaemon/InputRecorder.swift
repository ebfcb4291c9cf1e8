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
        var entries: ChunkedArray<Entry>
        /// Every entry's actions, one after the other: the core's array for one input is not kept (it is
        /// freed, and its memory reused, as without recording).
        var actions: ChunkedArray<CoreAction>
        /// Estimated bytes that `entries` and `actions` point to (names, details, payloads).
        var indirect = 0

        /// A segment of blocks sized for `maxBytes` (a sixteenth of it each, so that the half a segment
        /// may hold is eight blocks of each kind at most).
        init(checkpoint: DaemonCore, inputsBefore: Int, maxBytes: Int) {
            self.checkpoint = checkpoint
            self.inputsBefore = inputsBefore
            entries = ChunkedArray(chunkSize: maxBytes / 16 / MemoryLayout<Entry>.stride)
            actions = ChunkedArray(chunkSize: maxBytes / 16 / MemoryLayout<CoreAction>.stride)
        }

        /// Estimated bytes in memory: the blocks allocated (whole) and what their elements point to.
        var bytes: Int {
            entries.capacity * MemoryLayout<Entry>.stride + actions.capacity * MemoryLayout<CoreAction>.stride + indirect
        }
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
        current = Segment(checkpoint: core, inputsBefore: 0, maxBytes: maxBytes)
    }

    /// Inputs kept.
    var count: Int { (older?.entries.count ?? 0) + current.entries.count }
    /// Estimated bytes kept (the inputs and their actions; the checkpoints are the core's own buffers).
    var bytes: Int { (older?.bytes ?? 0) + current.bytes }
    /// Actions kept (every kept input's).
    var actionsKept: Int { (older?.actions.count ?? 0) + current.actions.count }
    /// Inputs taken and no longer kept.
    var forgotten: Int { (older ?? current).inputsBefore }

    /// Keeps one input the core took and its actions. True: the current segment is full; call
    /// ``startSegment(_:)`` with the core as it is now (after this input), before it takes the next.
    mutating func append(_ input: CoreInput, monotonic: Instant, realtime: RealtimeInstant, actions: [CoreAction]) -> Bool {
        taken += 1
        current.indirect += Self.indirect(input, actions)
        current.entries.append(Entry(
            input: input, monotonic: monotonic.microseconds, realtime: realtime.microsecondsSinceEpoch, actionCount: actions.count))
        current.actions.append(contentsOf: actions)
        return current.bytes >= maxBytes / 2
    }

    /// Lets the older segment go and begins a new one with `core` (a copy: O(1)) as its checkpoint.
    mutating func startSegment(_ core: DaemonCore) {
        older = current
        current = Segment(checkpoint: core, inputsBefore: taken, maxBytes: maxBytes)
        checkpoints += 1
    }

    /// Bytes an input points to, typically (measured: `RecorderMemoryProbeTests`).
    static let inputIndirect = 64
    /// Bytes an action points to, typically (measured: `RecorderMemoryProbeTests`).
    static let actionIndirect = 96

    /// The recording as the file holds it (the actions rendered now): from the older segment's checkpoint.
    func recording() -> CoreRecording {
        let first = older ?? current
        var inputs: [RecordedInput] = []
        inputs.reserveCapacity(count)
        for s in [older, current] {
            guard let s else { continue }
            var actions = s.actions.makeIterator()
            for e in s.entries {
                var decisions: [String] = []
                decisions.reserveCapacity(e.actionCount)
                for _ in 0..<e.actionCount {
                    guard let action = actions.next() else { break }
                    decisions.append(DaemonCore.describe(action))
                }
                inputs.append(RecordedInput(monotonicUSec: e.monotonic, realtimeUSec: e.realtime, input: e.input, decisions: decisions))
            }
        }
        return CoreRecording(checkpoint: first.checkpoint, inputsBefore: first.inputsBefore, inputs: inputs)
    }

    /// What an entry points to: what an input or action typically points to (names, detail: measured with
    /// `RecorderMemoryProbeTests`), and the payloads it carries, which may be large (a notification's, up to
    /// a message). The values themselves are counted by the arrays' capacities.
    private static func indirect(_ input: CoreInput, _ actions: [CoreAction]) -> Int {
        var bytes = inputIndirect + actions.count * actionIndirect
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
