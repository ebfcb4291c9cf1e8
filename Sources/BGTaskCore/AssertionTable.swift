/// The live assertions by identifier.
///
/// Identifiers are issued in increasing order, so records are appended in key order and found by binary
/// search: one array entry per assertion instead of a hash table's ~2.6 buckets per entry (100,000 live
/// assertions took 18 MiB in a `Dictionary`, 7 MiB here). An ended assertion in the middle becomes a
/// tombstone; the newest one (the usual begin/end pair) is removed outright. Tombstones are swept once
/// they outnumber the live entries, so every operation is O(log n) amortised and the array stays within
/// twice the live count.
struct AssertionTable: Sendable, Codable {
    private struct Slot: Sendable, Codable {
        var record: AssertionRecord
        var live: Bool
    }

    private var slots: [Slot] = []
    private var tombstones = 0

    /// Live assertions.
    var count: Int { slots.count - tombstones }

    /// Live identifiers, ascending (the order in which they were begun).
    var ids: [TaskID] { slots.compactMap { $0.live ? $0.record.id : nil } }

    /// The live assertion `task`.
    subscript(task: TaskID) -> AssertionRecord? {
        guard let k = index(of: task) else { return nil }
        return slots[k].record
    }

    /// Adds an assertion; its identifier must be greater than every identifier added before.
    mutating func insert(_ record: AssertionRecord) {
        precondition(slots.last.map { $0.record.id < record.id } ?? true, "task identifiers increase")
        slots.append(Slot(record: record, live: true))
    }

    /// Sets whether `background-task-will-expire` was sent for `task` (no-op when not live).
    mutating func setWarned(_ task: TaskID, _ warned: Bool) {
        guard let k = index(of: task) else { return }
        slots[k].record.warned = warned
    }

    /// Removes and returns the live assertion `task`.
    mutating func remove(_ task: TaskID) -> AssertionRecord? {
        guard let k = index(of: task) else { return nil }
        let record = slots[k].record
        if k == slots.count - 1 {
            slots.removeLast()
            while let last = slots.last, !last.live {
                slots.removeLast()
                tombstones -= 1
            }
            if slots.count < slots.capacity / 4, slots.capacity > 1024 { compact() }
        } else {
            slots[k].live = false
            // Drop the strings now; the slot only keeps its place in the order.
            slots[k].record.name = nil
            tombstones += 1
            if tombstones > count + 64 { compact() }
        }
        return record
    }

    /// Sweeps the tombstones into a right-sized array.
    private mutating func compact() {
        var fresh: [Slot] = []
        fresh.reserveCapacity(count)
        for slot in slots where slot.live { fresh.append(slot) }
        slots = fresh
        tombstones = 0
    }

    private func index(of task: TaskID) -> Int? {
        // The newest assertion is the one most often ended (a begin/end pair): look there first.
        if let last = slots.last, last.record.id == task { return last.live ? slots.count - 1 : nil }
        var lo = 0
        var hi = slots.count
        while lo < hi {
            let mid = (lo &+ hi) >> 1
            let id = slots[mid].record.id
            if id == task { return slots[mid].live ? mid : nil }
            if id < task { lo = mid + 1 } else { hi = mid }
        }
        return nil
    }
}
