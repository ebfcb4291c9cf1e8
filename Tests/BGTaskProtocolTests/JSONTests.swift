import Testing
@testable import BGTaskProtocol

@Suite struct JSONTests {
    @Test(arguments: [
        ("null", JSON.null), ("true", .bool(true)), ("false", .bool(false)),
        ("0", .int(0)), ("-12", .int(-12)), ("9223372036854775807", .int(.max)),
        ("1.5", .double(1.5)), ("1e3", .double(1000)), ("-0.25", .double(-0.25)),
        ("\"a\\\"b\\\\c\\n\"", .string("a\"b\\c\n")), ("\"\\u00e9\\ud83d\\ude00\"", .string("é😀")),
        ("[1, [2], {}]", .array([.int(1), .array([.int(2)]), .object([:])])),
        (" { \"k\" : [ null ] } ", .object(["k": .array([.null])])),
    ] as [(String, JSON)])
    func parses(text: String, expected: JSON) throws {
        #expect(try JSON.parse(text) == expected)
    }

    @Test(arguments: [
        "", "nul", "tru", "[1,]", "{\"a\":}", "{\"a\" 1}", "01", "1.", "-", "\"abc", "\"\\x\"", "\"\\ud800\"",
        "[1] 2", "{\"a\":1,}", "\u{01}", "\"a\u{01}\"", "1e", "[", "{",
    ])
    func rejects(text: String) {
        #expect(throws: JSONParseError.self) { try JSON.parse(text) }
    }

    @Test func rejectsDeepNesting() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(throws: JSONParseError.self) { try JSON.parse(deep) }
        let ok = String(repeating: "[", count: 60) + String(repeating: "]", count: 60)
        #expect((try? JSON.parse(ok)) != nil)
    }

    @Test func serializesDeterministically() {
        let v: JSON = ["b": [1, 2.5, "x\u{1}"], "a": nil, "c": ["t": true]]
        #expect(v.serialized() == #"{"a":null,"b":[1,2.5,"x\u0001"],"c":{"t":true}}"#)
    }

    @Test func roundTripsThroughText() throws {
        let v: JSON = ["n": .int(-9_223_372_036_854_775_808), "s": "é\"\\/\t", "d": 3.25, "arr": [[], [:]]]
        #expect(try JSON.parse(v.serialized()) == v)
    }
}
