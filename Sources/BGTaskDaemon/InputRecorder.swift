package import BGTaskCore

/// SPEC §17: the most recent inputs the core took, with both clocks, in a ring bounded by `RecordMaxBytes=`
/// (the blocks' bytes allocated, and the size of the entries kept as values estimated). Of the actions the
/// core returned for an input only a fingerprint is kept (their number and a 64-bit mix of what they
/// decide): copying the actions themselves (224 bytes each, with their strings) was most of what recording
/// cost the call path. When the recording
/// is asked for (off the daemon's queue) the kept inputs are fed again to a copy of the older segment's
/// checkpoint: the core is deterministic, so that gives the actions the live core returned, which each
/// input's fingerprint confirms. An input whose replayed actions do not match its fingerprint gets, in
/// place of its decisions, a line saying that the live daemon decided otherwise and what it is not known
/// (``CoreRecording/notKnownPrefix``): a replay of the file then stops there, naming it.
///
/// The ring is two segments, each a checkpoint of the core (a copy of the `DaemonCore` value as it was when
/// the segment began: O(1), its buffers shared with the live core until either changes them; the daemon
/// then has it encoded compactly, InputRecorder+Compact.swift) and the inputs taken since, in blocks:
/// packed as they are taken where the input has a packed form, kept as values beside the bytes where not
/// (InputRecorder+Packed.swift). When the current segment's inputs reach half the limit, the older segment
/// goes and a new one begins with the core as it is then. So the recording holds the last half to all of the
/// limit's worth of inputs, and replays from the older segment's checkpoint. Used on the daemon's queue
/// (`package`: bench/swift/RecordLoop.swift measures it).
package struct InputRecorder: Sendable {
    package struct Entry: Sendable, Codable, Equatable {
        var input: CoreInput
        var monotonic: Int64
        var realtime: Int64
        /// ``InputRecorder/fingerprint(_:)`` (InputRecorder+Fingerprint.swift) of the actions the live core
        /// returned for it.
        var fingerprint: Int
        /// How many actions the live core returned for it.
        var actionCount: Int
    }

    /// A checkpoint and the inputs since.
    struct Segment: Sendable {
        /// The core before the segment's first input: a copy, until the daemon has it encoded compactly
        /// (InputRecorder+Compact.swift).
        var checkpoint: Checkpoint
        /// Which checkpoint it is (``InputRecorder/checkpoints`` when it was taken).
        var number: Int
        /// Inputs the core took before it.
        var inputsBefore: Int
        /// The full blocks of inputs, in order, then ``tail``.
        var blocks: [Block] = []
        /// ``Block/memory`` of ``blocks``.
        var blockBytes = 0
        /// Blocks of ``blocks`` whose others are still values.
        var liveBlocks = 0
        /// The block inputs are appended to.
        var tail: Block
        /// Bytes a block packs into.
        let blockCapacity: Int
        /// Entries a block keeps as values at most.
        let maxOthers: Int
        /// The actions the live core returned for the entries (counted, not kept).
        var actions = 0
        /// Entries in ``blocks``.
        private(set) var blockCount = 0

        /// A segment of blocks sized for `maxBytes` (a sixteenth of it each).
        init(checkpoint: DaemonCore, number: Int, inputsBefore: Int, maxBytes: Int) {
            self.checkpoint = .live(checkpoint)
            self.number = number
            self.inputsBefore = inputsBefore
            blockCapacity = Swift.max(1024, maxBytes / 16)
            maxOthers = Swift.max(1, maxBytes / 16 / MemoryLayout<Entry>.stride)
            tail = Block(capacity: blockCapacity)
        }

        var count: Int { blockCount + tail.count }

        /// Estimated bytes in memory: the blocks' bytes allocated and their others (encoded, or values and
        /// what they point to).
        var bytes: Int { blockBytes + tail.memory }

        mutating func append(_ input: CoreInput, monotonic: Int64, realtime: Int64, fingerprint: Int, actionCount: Int) {
            if tail.count > 0, !tail.fits(input) { seal() }
            tail.append(input, monotonic: monotonic, realtime: realtime, fingerprint: fingerprint, actionCount: actionCount,
                        indirect: InputRecorder.indirect)
            if tail.isFull(maxOthers: maxOthers) { seal() }
        }

        /// Makes the tail a full block (its others to be encoded) and begins another.
        mutating func seal() {
            guard tail.count > 0 else { return }
            var block = tail
            tail = Block(capacity: 0)
            block.shrink()
            blockBytes += block.memory
            blockCount += block.count
            if block.liveOthers != nil { liveBlocks += 1 }
            blocks.append(block)
            tail = Block(capacity: blockCapacity)
        }

        /// Keeps the others of block `index` as `encoded` (their ``InputRecorder/encode(block:)``).
        mutating func compacted(_ index: Int, _ encoded: [UInt8]) {
            guard blocks.indices.contains(index), blocks[index].liveOthers != nil else { return }
            blockBytes -= blocks[index].memory
            blocks[index].compactedOthers(encoded)
            blockBytes += blocks[index].memory
            liveBlocks -= 1
        }

        func entries() throws -> [Entry] {
            var all: [Entry] = []
            all.reserveCapacity(count)
            for b in blocks { all += try b.entries() }
            return all + (try tail.entries())
        }
    }

    let maxBytes: Int
    var older: Segment?
    var current: Segment
    /// Inputs taken since the start (kept or not).
    private(set) var taken = 0
    /// Checkpoints taken since the start (segments begun after the first).
    private(set) var checkpoints = 0
    /// A checkpoint or a block is being encoded (InputRecorder+Compact.swift): one at a time.
    package var compacting = false
    /// A block failed to encode (not expected: every input encodes) or no thread could be made for it: the
    /// blocks' values are kept as taken from then on, still counted in the limit.
    var compactingStopped = false

    /// A recorder whose first segment begins with `core`, the core as the daemon built it.
    package init(start core: DaemonCore, maxBytes: Int) {
        self.maxBytes = maxBytes
        current = Segment(checkpoint: core, number: 0, inputsBefore: 0, maxBytes: maxBytes)
    }

    /// Inputs kept.
    package var count: Int { (older?.count ?? 0) + current.count }
    /// Estimated bytes kept (the inputs and their fingerprints; the checkpoints are not counted: see
    /// ``checkpointBytes``).
    package var bytes: Int { (older?.bytes ?? 0) + current.bytes }
    /// Actions the live core returned for the inputs kept (counted: the recording renders them again).
    var actionsKept: Int { (older?.actions ?? 0) + current.actions }
    /// Inputs taken and no longer kept.
    var forgotten: Int { (older ?? current).inputsBefore }

    /// Keeps one input the core took and the fingerprint of its actions. True: the current segment is full;
    /// call ``startSegment(_:)`` with the core as it is now (after this input), before it takes the next.
    package mutating func append(_ input: CoreInput, monotonic: Instant, realtime: RealtimeInstant, actions: [CoreAction]) -> Bool {
        taken += 1
        current.actions += actions.count
        current.append(input, monotonic: monotonic.microseconds, realtime: realtime.microsecondsSinceEpoch,
                       fingerprint: Self.fingerprint(actions), actionCount: actions.count)
        return current.bytes >= maxBytes / 2
    }

    /// Lets the older segment go and begins a new one with `core` (a copy: O(1)) as its checkpoint.
    package mutating func startSegment(_ core: DaemonCore) {
        current.seal()
        older = current
        checkpoints += 1
        current = Segment(checkpoint: core, number: checkpoints, inputsBefore: taken, maxBytes: maxBytes)
    }

    /// Bytes an input points to, typically (measured: `RecorderMemoryProbeTests`).
    static let inputIndirect = 64

    /// The recording as the file holds it: the kept inputs fed again, from the older segment's checkpoint,
    /// to a copy of it, their actions rendered now and checked against each input's fingerprint.
    func recording() throws -> CoreRecording { try checkedRecording().recording }

    /// ``recording()``, and `mismatches`: how many inputs the replay decided otherwise than the live core
    /// (their decisions say so: ``CoreRecording/notKnown(liveActions:replayedActions:)``). A coding error if
    /// the checkpoint, encoded compactly, does not decode (it always should).
    package func checkedRecording() throws -> (recording: CoreRecording, mismatches: Int) {
        let first = older ?? current
        let checkpoint = try first.checkpoint.core()
        var core = checkpoint
        var inputs: [RecordedInput] = []
        inputs.reserveCapacity(count)
        var mismatches = 0
        for s in [older, current] {
            guard let s else { continue }
            for e in try s.entries() {
                let actions = core.handle(
                    e.input, now: Instant(microseconds: e.monotonic), wall: RealtimeInstant(microsecondsSinceEpoch: e.realtime))
                let decisions: [String]
                if actions.count == e.actionCount, Self.fingerprint(actions) == e.fingerprint {
                    decisions = actions.map(DaemonCore.describe)
                } else {
                    mismatches += 1
                    decisions = [CoreRecording.notKnown(liveActions: e.actionCount, replayedActions: actions.count)]
                }
                inputs.append(RecordedInput(monotonicUSec: e.monotonic, realtimeUSec: e.realtime, input: e.input, decisions: decisions))
            }
        }
        return (CoreRecording(checkpoint: checkpoint, inputsBefore: first.inputsBefore, inputs: inputs), mismatches)
    }

    /// What an input points to: what an input typically points to (names, detail: measured with
    /// `RecorderMemoryProbeTests`), and the payloads it carries, which may be large (a notification's, up to
    /// a message). The values themselves are counted by the blocks' capacities.
    static func indirect(_ input: CoreInput) -> Int {
        var bytes = inputIndirect
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
        return bytes
    }
}
