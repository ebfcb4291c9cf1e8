import Foundation
import Testing
@testable import BGTaskCore

/// A connection's list of assertions against a `Set` model: begins in increasing order, ends in any order.
@Suite struct TaskListTests {
    @Test func matchesASet() throws {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            var list = TaskList()
            var model: Set<TaskID> = []
            var next: UInt64 = 1
            for _ in 0..<3000 {
                let roll = Int.random(in: 0..<10, using: &rng)
                if roll < 5 || model.isEmpty {
                    list.insert(TaskID(next))
                    model.insert(TaskID(next))
                    next += Bool.random(using: &rng) ? 1 : 3
                } else if roll < 7, let newest = model.max() {
                    list.remove(newest)
                    model.remove(newest)
                } else if let any = model.randomElement(using: &rng) {
                    list.remove(any)
                    model.remove(any)
                }
                list.remove(TaskID(next + 5))  // unknown: nothing
                #expect(list.count == model.count && list.isEmpty == model.isEmpty)
            }
            #expect(list.sorted == model.sorted())
            for n in 1..<next { #expect(list.contains(TaskID(n)) == model.contains(TaskID(n))) }
            // Encoded as the identifiers (a set's shape); decoded equal.
            let data = try JSONEncoder().encode(list)
            #expect(try JSONDecoder().decode([TaskID].self, from: data) == model.sorted())
            #expect(try JSONDecoder().decode(TaskList.self, from: data) == list)
        }
    }

    /// Identifiers given out of order (a decoded set) take their place; one given twice is kept once.
    @Test func outOfOrderIdentifiersAreSorted() throws {
        var list = TaskList([TaskID(9), TaskID(2), TaskID(5)])
        list.insert(TaskID(4))
        list.insert(TaskID(5))
        #expect(list.sorted == [2, 4, 5, 9].map { TaskID($0) })
        list.remove(TaskID(4))
        list.insert(TaskID(4))  // a tombstone brought back
        #expect(list.sorted == [2, 4, 5, 9].map { TaskID($0) } && list.count == 4)
        let decoded = try JSONDecoder().decode(TaskList.self, from: Data("[7,3,3,1]".utf8))
        #expect(decoded.sorted == [1, 3, 7].map { TaskID($0) })
    }
}
