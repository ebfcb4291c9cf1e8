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
}
