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
}
