import BGTaskModel
import BGTaskConfig
import Testing

/// The byte-wise search and order that replace `_StringProcessing`'s `contains` and strcmp at start-up.
@Suite struct StringBytesTests {
    @Test func containsBytesFindsWhatContainsFinds() {
        let texts = ["", "a", "org.example.App", "a..b", "/bin/sleep", "app-org.example.App-1234.scope", "ééé"]
        let needles = [".", "..", "/", "-org.example.App-", "é", "zz", "org.example.App.longer"]
        for t in texts {
            for n in needles {
                #expect(t.containsBytes(n) == t.contains(n), "\(t) / \(n)")
            }
        }
    }

    @Test func utf8PrecedesIsStringOrderForAppIDs() {
        let ids = ["org.b", "org.a", "org.a.x", "org.a-x", "org.A", "Org.a", "org.a_1", "org.a0", "o", "org.bench.S00001",
                   "org.bench.S00010", "org.bench.S1"]
        for a in ids {
            for b in ids {
                #expect(a.utf8Precedes(b) == (a < b), "\(a) < \(b)")
            }
        }
        #expect(ids.sorted { $0.utf8Precedes($1) } == ids.sorted())
    }

    @Test func utf8OrderSortsAsUTF8PrecedesAndKeepsEqualKeysInOrder() {
        var ids = ["org.b", "org.a", "org.a.x", "org.a-x", "org.A", "", "Org.a", "org.a_1", "org.a0", "o", "ééé", "é",
                   "org.bench.S00010", "org.bench.S1", "org.bench.S00001", "org.a", "", "zz"]
        for i in 0..<300 { ids.append("org.bench.S\((i * 7919) % 1000)") }
        let order = UTF8Order.sortedIndices(ids) { $0 }
        #expect(order.count == ids.count && Set(order).count == ids.count)
        #expect(order.map { ids[$0] } == ids.sorted { $0.utf8Precedes($1) })
        // Equal keys keep their positions' order (the two "org.a" and the two "").
        for (a, b) in zip(order, order.dropFirst()) where ids[a] == ids[b] { #expect(a < b) }
        // Keyed through a projection, as registration sorts (ID, index, uid) tuples.
        let tuples = ids.enumerated().map { ($0.element, $0.offset) }
        #expect(UTF8Order.sortedIndices(tuples) { $0.0 } == order)
        #expect(UTF8Order.sortedIndices([String]()) { $0 }.isEmpty)
    }
}
