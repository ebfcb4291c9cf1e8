/// A connection's assertions: their identifiers ascending, in one array (8 bytes each) where a
/// `Set<TaskID>` took ~20 (100,000 assertions on 16 connections: 2.1 MiB as sets). Identifiers are issued
/// in increasing order, so a new one is appended; the newest one ended (a Begin/End pair) is removed
/// outright and another becomes a tombstone (its top bit set), swept once tombstones outnumber the live
/// ones: each operation O(log n) amortised. Encoded as the identifiers, as the set was.
struct TaskList: Sendable {
    private var ids: [UInt64] = []
    private var dead = 0
    private static let deadBit: UInt64 = 1 << 63

    init() {}

    /// One task: its identifier in an array of one (the generic initialiser sorted a copy first, ~1,000
    /// instructions on each Begin of a connection holding nothing else, callgrind).
    init(_ task: TaskID) {
        precondition(task.rawValue & Self.deadBit == 0, "task identifiers are below 2^63")
        ids = [task.rawValue]
    }

    init<S: Sequence<TaskID>>(_ tasks: S) {
        for task in tasks.sorted() { insert(task) }
    }

    /// Live identifiers.
    var count: Int { ids.count - dead }
    var isEmpty: Bool { ids.count == dead }

    /// The live identifiers, ascending.
    var sorted: [TaskID] { ids.compactMap { $0 & Self.deadBit == 0 ? TaskID($0) : nil } }

    func contains(_ task: TaskID) -> Bool {
        let k = lowerBound(task.rawValue)
        return k < ids.count && ids[k] == task.rawValue
    }

    mutating func insert(_ task: TaskID) {
        precondition(task.rawValue & Self.deadBit == 0, "task identifiers are below 2^63")
        guard let last = ids.last, last & ~Self.deadBit >= task.rawValue else { return ids.append(task.rawValue) }
        // Not the newest (a decoded list): in its place.
        let k = lowerBound(task.rawValue)
        if k < ids.count, ids[k] & ~Self.deadBit == task.rawValue {
            if ids[k] & Self.deadBit != 0 {
                ids[k] = task.rawValue
                dead -= 1
            }
            return
        }
        ids.insert(task.rawValue, at: k)
    }

    mutating func remove(_ task: TaskID) {
        if ids.last == task.rawValue {
            ids.removeLast()
            while let last = ids.last, last & Self.deadBit != 0 {
                ids.removeLast()
                dead -= 1
            }
            return
        }
        let k = lowerBound(task.rawValue)
        guard k < ids.count, ids[k] == task.rawValue else { return }
        ids[k] |= Self.deadBit
        dead += 1
        if dead > count + 16 { ids = ids.filter { $0 & Self.deadBit == 0 }; dead = 0 }
    }

    /// The first position whose identifier (tombstone or not) is not below `raw`.
    private func lowerBound(_ raw: UInt64) -> Int {
        var lo = 0
        var hi = ids.count
        while lo < hi {
            let mid = (lo &+ hi) >> 1
            if ids[mid] & ~Self.deadBit < raw { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}

extension TaskList: Hashable {
    static func == (a: TaskList, b: TaskList) -> Bool { a.sorted == b.sorted }
    func hash(into hasher: inout Hasher) { hasher.combine(sorted) }
}

extension TaskList: Codable {
    init(from decoder: any Decoder) throws {
        self.init(try decoder.singleValueContainer().decode([TaskID].self))
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(sorted)
    }
}
