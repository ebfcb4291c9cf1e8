/// The live assertions by identifier.
///
/// Identifiers are issued in increasing order, so records are appended in key order and found by binary
/// search: one array entry per assertion instead of a hash table's ~2.6 buckets per entry (100,000 live
/// assertions took 18 MiB in a `Dictionary`, 7 MiB here). An ended assertion in the middle becomes a
/// tombstone; the newest one (the usual begin/end pair) is removed outright. Tombstones are swept once
/// they outnumber the live entries, so every operation is O(log n) amortised and the array stays within
/// twice the live count.
///
/// A slot is 32 bytes, not the record's 64: its app and its name are numbers in pools of those in use (an
/// app holds several assertions; apps name their tasks with a few fixed words: 100,000 assertions of 10,000
/// apps named alike keep 10,000 IDs and one name), and its flags share the name's 32 bits. Encoded as the
/// slots of records it was before (checkpoints keep their shape).
struct AssertionTable: Sendable {
    private struct Slot: Sendable {
        var id: TaskID
        var connection: ConnectionID
        var begun: Instant
        /// `apps` number (0: a tombstone's).
        var app: UInt32
        /// The name's `names` number (0: none) above four bits of ``Flags``.
        var tag: UInt32

        var flags: Flags {
            get { Flags(rawValue: UInt8(truncatingIfNeeded: tag & 0xF)) }
            set { tag = tag & ~0xF | UInt32(newValue.rawValue) }
        }
        var name: UInt32 {
            get { tag >> 4 }
            set { tag = newValue << 4 | tag & 0xF }
        }
    }

    private struct Flags: OptionSet, Sendable {
        let rawValue: UInt8
        static let live = Flags(rawValue: 1)
        static let warned = Flags(rawValue: 2)
        static let managerHold = Flags(rawValue: 4)
        static let continued = Flags(rawValue: 8)
    }

    private var slots: [Slot] = []
    private var tombstones = 0
    private var names = Pool<String>()
    private var apps = Pool<AppID>()

    /// Live assertions.
    var count: Int { slots.count - tombstones }

    /// Distinct names of live assertions (for tests).
    var namesInUse: Int { names.inUse }

    /// Distinct apps of live assertions (for tests).
    var appsInUse: Int { apps.inUse }

    /// The bytes of a slot (for tests).
    var slotStride: Int { MemoryLayout<Slot>.stride }

    /// Live identifiers, ascending (the order in which they were begun).
    var ids: [TaskID] { slots.compactMap { $0.flags.contains(.live) ? $0.id : nil } }

    /// The live assertion `task`.
    subscript(task: TaskID) -> AssertionRecord? {
        guard let k = index(of: task) else { return nil }
        return record(slots[k])
    }

    private func record(_ slot: Slot) -> AssertionRecord {
        AssertionRecord(
            id: slot.id, app: apps[slot.app]!, connection: slot.connection, name: names[slot.name], begun: slot.begun,
            warned: slot.flags.contains(.warned), managerHold: slot.flags.contains(.managerHold),
            continued: slot.flags.contains(.continued))
    }

    /// Adds an assertion; its identifier must be greater than every identifier added before.
    mutating func insert(_ record: AssertionRecord) {
        precondition(slots.last.map { $0.id < record.id } ?? true, "task identifiers increase")
        insert(record, live: true)
    }

    private mutating func insert(_ record: AssertionRecord, live: Bool) {
        var flags: Flags = live ? .live : []
        if record.warned { flags.insert(.warned) }
        if record.managerHold { flags.insert(.managerHold) }
        if record.continued { flags.insert(.continued) }
        var slot = Slot(
            id: record.id, connection: record.connection, begun: record.begun, app: live ? apps.retain(record.app) : 0,
            tag: 0)
        slot.name = live ? names.retain(record.name) : 0
        slot.flags = flags
        slots.append(slot)
    }

    /// Sets whether `background-task-will-expire` was sent for `task` (no-op when not live).
    mutating func setWarned(_ task: TaskID, _ warned: Bool) {
        guard let k = index(of: task) else { return }
        if warned { slots[k].flags.insert(.warned) } else { slots[k].flags.remove(.warned) }
    }

    /// Removes and returns the live assertion `task`.
    mutating func remove(_ task: TaskID) -> AssertionRecord? {
        guard let k = index(of: task) else { return nil }
        let record = record(slots[k])
        names.release(slots[k].name)
        apps.release(slots[k].app)
        if k == slots.count - 1 {
            slots.removeLast()
            while let last = slots.last, !last.flags.contains(.live) {
                slots.removeLast()
                tombstones -= 1
            }
            if slots.count < slots.capacity / 4, slots.capacity > 1024 { compact() }
        } else {
            slots[k].flags.remove(.live)
            // The slot only keeps its place in the order.
            slots[k].name = 0
            slots[k].app = 0
            tombstones += 1
            if tombstones > count + 64 { compact() }
        }
        return record
    }

    /// Sweeps the tombstones into a right-sized array.
    private mutating func compact() {
        var fresh: [Slot] = []
        fresh.reserveCapacity(count)
        for slot in slots where slot.flags.contains(.live) { fresh.append(slot) }
        slots = fresh
        tombstones = 0
    }

    private func index(of task: TaskID) -> Int? {
        // The newest assertion is the one most often ended (a begin/end pair): look there first.
        if let last = slots.last, last.id == task { return last.flags.contains(.live) ? slots.count - 1 : nil }
        var lo = 0
        var hi = slots.count
        while lo < hi {
            let mid = (lo &+ hi) >> 1
            let id = slots[mid].id
            if id == task { return slots[mid].flags.contains(.live) ? mid : nil }
            if id < task { lo = mid + 1 } else { hi = mid }
        }
        return nil
    }
}

extension AssertionTable: Codable {
    /// The encoded shape: each slot as its record and whether it is live (a decoded tombstone is kept as one).
    private struct EncodedSlot: Codable {
        var record: AssertionRecord
        var live: Bool
    }

    private enum CodingKeys: String, CodingKey { case slots, tombstones }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var previous: TaskID?
        for slot in try c.decode([EncodedSlot].self, forKey: .slots) {
            if let previous, slot.record.id <= previous {
                throw DecodingError.dataCorruptedError(
                    forKey: .slots, in: c, debugDescription: "task identifiers must increase")
            }
            previous = slot.record.id
            insert(slot.record, live: slot.live)
            if !slot.live { tombstones += 1 }
        }
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        // The live slots only: a tombstone keeps no app, and its place in the order is a detail of this array.
        try c.encode(
            slots.compactMap { $0.flags.contains(.live) ? EncodedSlot(record: record($0), live: true) : nil },
            forKey: .slots)
        try c.encode(0, forKey: .tombstones)
    }
}

/// Values some slots name (the names and apps of live assertions), each kept once with a count of the slots
/// naming it; a slot holds its number (from 1; 0: none). A value no slot names any more keeps its number
/// until such values outnumber the ones in use (then they are swept and their numbers reused): a Begin/End
/// pair repeated under one name changes no table.
struct Pool<Value: Hashable & Sendable>: Sendable {
    /// `nil`: a free number.
    private var values: [Value?] = []
    private var uses: [UInt32] = []
    private var numbers: [Value: UInt32] = [:]
    private var free: [UInt32] = []
    /// Values kept that no slot names.
    private var unused = 0

    /// Values some slot names.
    var inUse: Int { numbers.count - unused }

    /// The value numbered `number` (0: none).
    subscript(number: UInt32) -> Value? { number == 0 ? nil : values[Int(number) - 1] }

    /// The number of `value`, counted once more (0 for none).
    mutating func retain(_ value: Value?) -> UInt32 {
        guard let value else { return 0 }
        if let n = numbers[value] {
            if uses[Int(n) - 1] == 0 { unused -= 1 }
            uses[Int(n) - 1] += 1
            return n
        }
        let n: UInt32
        if let reused = free.popLast() {
            n = reused
            values[Int(n) - 1] = value
            uses[Int(n) - 1] = 1
        } else {
            // A name's number shares 32 bits with four bits of flags: at most 2^28 - 1.
            precondition(values.count < (1 << 28) - 1, "a pool numbers fewer than 2^28 values")
            values.append(value)
            uses.append(1)
            n = UInt32(values.count)
        }
        numbers[value] = n
        return n
    }

    /// Counts `number` once less.
    mutating func release(_ number: UInt32) {
        guard number != 0 else { return }
        uses[Int(number) - 1] -= 1
        guard uses[Int(number) - 1] == 0 else { return }
        unused += 1
        if unused > inUse + 64 { sweep() }
    }

    /// Drops the values no slot names; their numbers are reused.
    private mutating func sweep() {
        for k in uses.indices where uses[k] == 0 {
            guard let value = values[k] else { continue }
            numbers[value] = nil
            values[k] = nil
            free.append(UInt32(k + 1))
        }
        unused = 0
    }
}
