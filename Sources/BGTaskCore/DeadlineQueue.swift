import HeapModule

/// Pending deadlines keyed by what they are for, each key armed at most once.
///
/// A binary heap with lazy invalidation: re-arming or cancelling a key leaves its old heap entry behind,
/// recognised as stale by its serial number. Stale entries are dropped from the top after every change, so
/// ``next`` is always a live deadline, and the heap is rebuilt when stale entries outnumber live ones, so
/// its size stays within a constant factor of the live count. Every operation is O(log n) amortised.
struct DeadlineQueue<Key: Hashable & Sendable>: Sendable {
    private struct Entry: Comparable, Sendable {
        var at: Instant
        var serial: UInt64
        var key: Key

        // The serial breaks ties, so deadlines due at the same instant fire in the order they were armed.
        static func < (lhs: Entry, rhs: Entry) -> Bool {
            lhs.at != rhs.at ? lhs.at < rhs.at : lhs.serial < rhs.serial
        }
        static func == (lhs: Entry, rhs: Entry) -> Bool { lhs.serial == rhs.serial }
    }

    private var heap = Heap<Entry>()
    private var armed: [Key: (serial: UInt64, at: Instant)] = [:]
    private var nextSerial: UInt64 = 0

    /// The earliest live deadline.
    var next: Instant? { heap.min?.at }

    /// The number of live deadlines.
    var count: Int { armed.count }

    /// The instant `key` is armed for.
    func deadline(of key: Key) -> Instant? { armed[key]?.at }

    /// Arms `key` at `at`, replacing any earlier arming of the same key.
    mutating func arm(_ key: Key, at: Instant) {
        nextSerial += 1
        armed[key] = (nextSerial, at)
        heap.insert(Entry(at: at, serial: nextSerial, key: key))
        tidy()
    }

    /// Disarms `key` (harmless when it is not armed).
    mutating func cancel(_ key: Key) {
        guard armed.removeValue(forKey: key) != nil else { return }
        tidy()
    }

    /// Removes and returns the earliest live deadline due at or before `now`.
    mutating func popDue(_ now: Instant) -> (key: Key, at: Instant)? {
        guard let top = heap.min, top.at <= now else { return nil }
        heap.removeMin()
        armed.removeValue(forKey: top.key)
        tidy()
        return (top.key, top.at)
    }

    private func isLive(_ entry: Entry) -> Bool { armed[entry.key]?.serial == entry.serial }

    private mutating func tidy() {
        while let top = heap.min, !isLive(top) { heap.removeMin() }
        if heap.count > 2 * armed.count + 64 {
            heap = Heap(armed.map { Entry(at: $0.value.at, serial: $0.value.serial, key: $0.key) })
        }
    }
}

// SPEC §17: a recording's checkpoint codes the live deadlines and the next serial. The heap is rebuilt
// from them: stale entries never fire and ties break by serial, so the queue pops in the same order.
extension DeadlineQueue: Codable where Key: Codable {
    private struct Armed: Codable {
        var key: Key
        var serial: UInt64
        var at: Instant
    }

    private enum CodingKeys: String, CodingKey { case armed, nextSerial }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        nextSerial = try c.decode(UInt64.self, forKey: .nextSerial)
        for a in try c.decode([Armed].self, forKey: .armed) {
            armed[a.key] = (a.serial, a.at)
        }
        heap = Heap(armed.map { Entry(at: $0.value.at, serial: $0.value.serial, key: $0.key) })
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(nextSerial, forKey: .nextSerial)
        // In serial order (the dictionary's order differs from process to process). The positions are
        // sorted, not the entries: moving an entry retains and releases its key.
        let entries = Array(armed)
        let serials = entries.map(\.value.serial)
        let live = serials.indices.sorted { serials[$0] < serials[$1] }.map {
            Armed(key: entries[$0].key, serial: serials[$0], at: entries[$0].value.at)
        }
        try c.encode(live, forKey: .armed)
    }
}
