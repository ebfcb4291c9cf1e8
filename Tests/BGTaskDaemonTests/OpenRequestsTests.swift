import BGTaskCore
import Testing
@testable import BGTaskDaemon

/// The open requests' table (its newest in a slot of its own, the rest in a dictionary) answers as a
/// dictionary would, whatever the order of opens, look-ups and closes.
@Suite struct OpenRequestsTests {
    @Test func answersAsADictionaryWould() {
        var table = OpenRequests<Int>()
        var model: [RequestID: Int] = [:]
        var rng = LCG(seed: 24)
        var next: UInt64 = 0
        for step in 0..<20_000 {
            // IDs from a small range, so that look-ups and closes hit the slot, the dictionary and nothing.
            let id = RequestID(rng.next() % 12)
            switch rng.next() % 5 {
            case 0:
                next += 1
                let fresh = RequestID(next % 12)
                table[fresh] = step
                model[fresh] = step
            case 1:
                #expect(table.removeValue(forKey: id) == model.removeValue(forKey: id))
            case 2:
                table[id] = nil
                model[id] = nil
            case 3:
                if model[id] != nil {
                    table[id] = -step
                    model[id] = -step
                }
            default:
                break
            }
            #expect(table[id] == model[id])
            #expect(table.count == model.count)
        }
        for id in (0..<12).map({ RequestID(UInt64($0)) }) { #expect(table[id] == model[id]) }
    }

    @Test func theUsualCallOpensAndClosesInTheSlot() {
        var table = OpenRequests<String>()
        table[RequestID(1)] = "waiting launch"
        table[RequestID(2)] = "call"
        #expect(table[RequestID(2)] == "call")
        #expect(table.removeValue(forKey: RequestID(2)) == "call")
        #expect(table.removeValue(forKey: RequestID(2)) == nil)
        #expect(table[RequestID(1)] == "waiting launch")
        #expect(table.count == 1)
    }
}

/// A deterministic sequence (Knuth's MMIX linear congruential generator, its high bits).
private struct LCG {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return state >> 33
    }
}
