package import BGTaskCore
import BGTaskProtocol

/// A recording's checkpoints kept compact (SPEC §17). A checkpoint is taken as a copy of the core (O(1)),
/// but as the live core changes afterwards, copy-on-write leaves the checkpoint holding the old buffers of
/// every table changed: about one whole copy of the core's largest arrays per checkpoint. So once taken, a
/// checkpoint is encoded off the daemon's queue (its Codable form written as it encodes in a binary form,
/// ``JSON/compactEncode(_:)``: varints, each string and key written once) and the copy dropped; a recording
/// asked for decodes it back to the core, off the queue as well. `CheckpointCompactTests` checks that the
/// round trip is exact and that a recording taken after compacted checkpoints replays with no mismatch.
extension InputRecorder {
    /// The core a segment begins with.
    package enum Checkpoint: Sendable {
        /// A copy of the core (its buffers shared with the live core until either changes them).
        case live(DaemonCore)
        /// The core encoded by ``InputRecorder/encode(_:)``.
        case compact([UInt8])

        /// The core (decoded if compact).
        func core() throws -> DaemonCore {
            switch self {
            case .live(let core): return core
            case .compact(let bytes): return try InputRecorder.decode(bytes)
            }
        }
    }

    /// `core` in the compact form a checkpoint is kept in.
    package static func encode(_ core: DaemonCore) throws -> [UInt8] { exact(try JSON.compactEncode(core)) }

    /// The core ``encode(_:)`` gave `bytes` for.
    package static func decode(_ bytes: [UInt8]) throws -> DaemonCore { try JSON(compact: bytes).decode(DaemonCore.self) }

    /// The entries of a full block that are not packed, in the compact form they are kept in: each app ID,
    /// name and key written once.
    package static func encode(block entries: [Entry]) throws -> [UInt8] { exact(try JSON.compactEncode(entries)) }

    /// `bytes` in an array of their own size when more than `spareAllowed` of its capacity is unused (the
    /// encodings, made off the queue: an encoder's output grows by doubling, and what the ring keeps would
    /// otherwise carry up to as much again unused; a block sealed early, ``Block/shrink()``).
    static func exact(_ bytes: [UInt8], spareAllowed: Int = 4096) -> [UInt8] {
        guard bytes.capacity - bytes.count > spareAllowed else { return bytes }
        return [UInt8](unsafeUninitializedCapacity: bytes.count) { buffer, initialized in
            initialized = buffer.initialize(fromContentsOf: bytes)
        }
    }

    /// The entries ``encode(block:)`` gave `bytes` for.
    static func decode(block bytes: [UInt8]) throws -> [Entry] { try JSON(compact: bytes).decode([Entry].self) }

    /// A full block still has entries kept as values (``blockToCompact``).
    package var hasBlockToCompact: Bool { !compactingStopped && (current.liveBlocks > 0 || (older?.liveBlocks ?? 0) > 0) }

    /// ``hasBlockToCompact``, read where the recorder is: the daemon keeps it in an optional stored property
    /// of a class, and a getter reached through one is handed a copy of the whole recorder (a memcpy of
    /// ~270 instructions on every call, callgrind).
    package mutating func blockWaitsToCompact() -> Bool { hasBlockToCompact }

    /// Which full block still has entries kept as values, and those entries: to encode (``encode(block:)``, off the
    /// daemon's queue) and give back with ``compacted(block:_:)``. The older segment's first.
    package var blockToCompact: (block: BlockID, entries: [Entry])? {
        guard hasBlockToCompact else { return nil }
        for s in [older, current] {
            guard let s else { continue }
            for (index, b) in s.blocks.enumerated() {
                if let entries = b.liveOthers { return (BlockID(segment: s.number, index: index), entries) }
            }
        }
        return nil
    }

    /// A block of a segment.
    package struct BlockID: Sendable, Equatable {
        let segment: Int
        let index: Int
    }

    /// Keeps `block` as `bytes` (its ``encode(block:)``) in place of its entries, if the recorder still keeps
    /// it.
    package mutating func compacted(block: BlockID, _ bytes: [UInt8]) {
        if current.number == block.segment {
            current.compacted(block.index, bytes)
        } else if older?.number == block.segment {
            older?.compacted(block.index, bytes)
        }
    }

    /// The newest checkpoint if it is still a copy of the core, and its number: to encode (``encode(_:)``,
    /// off the daemon's queue) and give back with ``compacted(_:_:)``.
    package var checkpointToCompact: (number: Int, core: DaemonCore)? {
        if case .live(let core) = current.checkpoint { return (current.number, core) }
        return nil
    }

    /// Keeps checkpoint `number` as `bytes` (its ``encode(_:)``) in place of the copy of the core, if the
    /// recorder still keeps it.
    package mutating func compacted(_ number: Int, _ bytes: [UInt8]) {
        if current.number == number {
            current.checkpoint = .compact(bytes)
        } else if older?.number == number {
            older?.checkpoint = .compact(bytes)
        }
    }

    /// Bytes of the checkpoints kept compact (a checkpoint still a copy of the core counts none: its buffers
    /// are the core's own until the live core changes them). Not counted in ``bytes`` nor the limit.
    package var checkpointBytes: Int {
        func size(_ s: Segment?) -> Int {
            if case .compact(let bytes)? = s?.checkpoint { return bytes.count }
            return 0
        }
        return size(older) + size(current)
    }
}
