import BGTaskConfig
import Testing

/// `UTF8Order`'s keys (the first 16 bytes) give the order `utf8Precedes` gives, whatever the strings.
@Suite struct UTF8OrderTests {
    @Test func sortedIndicesIsUTF8Order() {
        var strings = ["", "a", "a\0", "a\0b", "b", "org.bench.S00001", "org.bench.S00001.app", "org.bench.S0000",
                       "org.example.LongerThanSixteen.B", "org.example.LongerThanSixteen.A", "org.example.LongerThan",
                       "org.example.LongerThanSixteen", "é", "e\u{301}", "Zz", "zZ", "0123456789abcdef", "0123456789abcdeg",
                       "0123456789abcde", "0123456789abcdef\0", "\u{7f}", "\u{80}"]
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("ab.\0é-")
        for _ in 0..<400 {
            strings.append(String((0..<Int.random(in: 0...20, using: &generator)).map { _ in alphabet.randomElement(using: &generator) ?? "a" }))
        }
        let expected = strings.indices.sorted { strings[$0].utf8Precedes(strings[$1]) }.map { strings[$0] }
        #expect(UTF8Order.sortedIndices(strings).map { strings[$0] } == expected)
        #expect(UTF8Order.sortedIndices([]).isEmpty)
    }
}
