import BGTaskProtocol
import Testing

// Codable over JSON (JSON+Codable.swift): what record and replay (SPEC §17) write and read.
@Suite struct JSONCodableTests {
    enum Shape: Codable, Equatable {
        case none
        case point(x: Int64, y: Int64)
        case named(String, tags: Set<String>, weight: Double?)
    }

    struct Box: Codable, Equatable {
        var shapes: [Shape]
        var byName: [String: UInt32]
        var flag: Bool
        var small: UInt8
    }

    @Test func valuesRoundTripExactly() throws {
        let box = Box(
            shapes: [.none, .point(x: Int64.max, y: -1), .named("é\u{0}\"", tags: ["a", "b"], weight: nil), .named("x", tags: [], weight: 0.5)],
            byName: ["a": 1, "b": UInt32.max], flag: true, small: 255)
        let text = try JSON.encode(box).serialized()
        #expect(try JSON.parse(text).decode(Box.self) == box)
    }

    @Test func aValueOfTheWrongTypeOrRangeIsAnErrorNamingWhere() throws {
        let bad = try JSON.parse(#"{"shapes":[],"byName":{"a":-1},"flag":true,"small":1}"#)
        #expect(throws: JSONCodingError.self) { try bad.decode(Box.self) }
        do {
            _ = try bad.decode(Box.self)
        } catch let error as JSONCodingError {
            #expect(error.path == ".byName.a")
        }
        let missing = try JSON.parse(#"{"shapes":[],"byName":{},"flag":true}"#)
        #expect(throws: JSONCodingError.self) { try missing.decode(Box.self) }
        // An unknown case: the synthesized decoder says so (DecodingError).
        #expect(throws: (any Error).self) { try JSON.parse(#"{"shapes":[{"nope":{}}],"byName":{},"flag":true,"small":1}"#).decode(Box.self) }
    }

    @Test func anUnsignedValueBeyondInt64IsAnErrorNotATrap() {
        #expect(throws: JSONCodingError.self) { try JSON.encode([UInt64.max]) }
    }
}
