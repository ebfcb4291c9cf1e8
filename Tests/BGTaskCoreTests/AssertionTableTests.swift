import Foundation
import Testing
@testable import BGTaskCore

/// The sorted assertion table against a `Dictionary` model: random begins and ends in any order.
@Suite struct AssertionTableTests {
    func record(_ n: UInt64) -> AssertionRecord {
        AssertionRecord(
            id: TaskID(n), app: AppID("org.example.App\(n % 7)")!, connection: ConnectionID(n % 5),
            name: n % 2 == 0 ? "task \(n)" : nil, begun: Instant(microseconds: Int64(n)), warned: false)
    }

    @Test func matchesADictionary() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            var table = AssertionTable()
            var model: [TaskID: AssertionRecord] = [:]
            var next: UInt64 = 1
            for _ in 0..<3000 {
                let roll = Int.random(in: 0..<10, using: &rng)
                if roll < 5 || model.isEmpty {
                    let r = record(next)
                    next += 1
                    table.insert(r)
                    model[r.id] = r
                } else if roll < 7, let newest = model.keys.max() {
                    #expect(table.remove(newest) == model.removeValue(forKey: newest))
                } else if roll < 9, let any = model.keys.randomElement(using: &rng) {
                    #expect(table.remove(any) == model.removeValue(forKey: any))
                } else if let any = model.keys.randomElement(using: &rng) {
                    table.setWarned(any, true)
                    model[any]?.warned = true
                }
                // Unknown and already-ended identifiers.
                #expect(table.remove(TaskID(next + 3)) == nil)
                #expect(table[TaskID(0)] == nil)
            }
            #expect(table.count == model.count)
            #expect(table.ids == model.keys.sorted())
            for n in 1..<next { #expect(table[TaskID(n)] == model[TaskID(n)]) }
        }
    }

    @Test func endingEverythingEmptiesIt() {
        var table = AssertionTable()
        for n in 1...10_000 { table.insert(record(UInt64(n))) }
        for n in stride(from: 1, through: 10_000, by: 2) { _ = table.remove(TaskID(UInt64(n))) }
        #expect(table.count == 5_000)
        for n in stride(from: 2, through: 10_000, by: 2) { _ = table.remove(TaskID(UInt64(n))) }
        #expect(table.count == 0)
        #expect(table.ids.isEmpty)
    }

    @Test func aNameIsKeptOnceWhileNamedAndItsNumberReusedAfterASweep() {
        var pool = Pool<String>()
        let a = pool.retain("upload")
        #expect(pool.retain("upload") == a && pool.retain(nil) == 0 && pool[0] == nil)
        #expect(pool[a] == "upload" && pool.inUse == 1)
        pool.release(a)
        pool.release(a)
        // Unused, still kept: the same number again, no table changed.
        #expect(pool.inUse == 0 && pool.retain("upload") == a)
        // 66 names used once and let go: more unused than in use + 64, so they are swept...
        var numbers: [UInt32] = []
        for n in 0..<66 { numbers.append(pool.retain("n\(n)")) }
        for k in numbers { pool.release(k) }
        #expect(pool.inUse == 1 && pool[a] == "upload")
        // ...and their numbers reused for new names, the name still in use untouched.
        let reused = pool.retain("fresh")
        #expect(numbers.contains(reused) && pool[reused] == "fresh" && pool[a] == "upload")
    }

    /// 100,000 assertions of one app named alike keep one name and one app; the slot is 32 bytes where the
    /// record is 64; none is kept once all have ended.
    @Test func manyAssertionsNamedAlikeKeepOneName() {
        var table = AssertionTable()
        for n in 1...100_000 {
            table.insert(AssertionRecord(
                id: TaskID(UInt64(n)), app: AppID("org.example.App")!, connection: ConnectionID(1), name: "sync",
                begun: .zero, warned: false))
        }
        #expect(table.namesInUse == 1 && table.appsInUse == 1)
        #expect(table.slotStride == 32 && MemoryLayout<AssertionRecord>.stride == 64)
        for n in 1...100_000 where n % 3 != 0 { _ = table.remove(TaskID(UInt64(n))) }
        #expect(table.namesInUse == 1 && table[TaskID(99_999)]?.name == "sync")
        for n in stride(from: 3, through: 100_000, by: 3) { _ = table.remove(TaskID(UInt64(n))) }
        #expect(table.namesInUse == 0 && table.appsInUse == 0 && table.count == 0)
    }

    /// Encoded as slots of records, as before (the live ones); decoded back to the same assertions, a
    /// tombstone decoded (an earlier encoding) kept as one.
    @Test func encodesItsSlotsAsRecordsAndDecodesThem() throws {
        var table = AssertionTable()
        for n in 1...20 { table.insert(record(UInt64(n))) }
        for n in [3, 4, 9] { _ = table.remove(TaskID(UInt64(n))) }
        table.setWarned(TaskID(6), true)
        let data = try JSONEncoder().encode(table)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let slots = try #require(object["slots"] as? [[String: Any]])
        #expect(object["tombstones"] as? Int == 0 && slots.count == 17 && slots.allSatisfy { $0["live"] as? Bool == true })
        #expect((slots[1]["record"] as? [String: Any])?["name"] as? String == "task 2")
        let decoded = try JSONDecoder().decode(AssertionTable.self, from: data)
        #expect(decoded.ids == table.ids && decoded.count == 17)
        for n in 1...20 { #expect(decoded[TaskID(UInt64(n))] == table[TaskID(UInt64(n))]) }
        #expect(decoded[TaskID(6)]?.warned == true)
        // An earlier encoding, with a tombstone where 3 was: decoded, 3 not live.
        var withTombstone = slots
        withTombstone.insert(["record": try JSONSerialization.jsonObject(with: JSONEncoder().encode(record(3))), "live": false], at: 2)
        let earlier = try JSONDecoder().decode(
            AssertionTable.self, from: JSONSerialization.data(withJSONObject: ["slots": withTombstone, "tombstones": 1]))
        #expect(earlier.count == 17 && earlier.ids == table.ids && earlier[TaskID(3)] == nil && earlier[TaskID(5)] == table[TaskID(5)])
        // Identifiers out of order are refused.
        var records = slots
        var first = try #require(records[0]["record"] as? [String: Any])
        first["id"] = 7
        records[0]["record"] = first
        let swapped = try JSONSerialization.data(withJSONObject: ["slots": records, "tombstones": 0])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(AssertionTable.self, from: swapped) }
    }
}
