/// Why a JSON text was rejected.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public let offset: Int
    public let reason: String
    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

extension JSON {
    /// The deepest nesting accepted; deeper input is rejected instead of exhausting the stack.
    public static let maxDepth = 64

    /// Parses one JSON value that fills `bytes` (surrounding whitespace allowed).
    public static func parse<C: Collection<UInt8>>(_ bytes: C) throws(JSONParseError) -> JSON {
        let result: Result<JSON, JSONParseError> = bytes.withContiguousStorageIfAvailable { buf in
            var p = Parser(buf)
            return Result { () throws(JSONParseError) -> JSON in try p.parseDocument() }
        } ?? {
            let copy = Array(bytes)
            return copy.withUnsafeBufferPointer { buf in
                var p = Parser(buf)
                return Result { () throws(JSONParseError) -> JSON in try p.parseDocument() }
            }
        }()
        return try result.get()
    }

    public static func parse(_ text: String) throws(JSONParseError) -> JSON {
        try parse(Array(text.utf8))
    }
}

private struct Parser {
    let buf: UnsafeBufferPointer<UInt8>
    var i = 0

    init(_ buf: UnsafeBufferPointer<UInt8>) { self.buf = buf }

    func fail(_ reason: String) -> JSONParseError { JSONParseError(offset: i, reason: reason) }

    mutating func skipSpace() {
        while i < buf.count {
            switch buf[i] {
            case 0x20, 0x09, 0x0A, 0x0D: i += 1
            default: return
            }
        }
    }

    mutating func parseDocument() throws(JSONParseError) -> JSON {
        skipSpace()
        let v = try parseValue(depth: 0)
        skipSpace()
        if i != buf.count { throw fail("trailing characters") }
        return v
    }

    mutating func parseValue(depth: Int) throws(JSONParseError) -> JSON {
        guard depth < JSON.maxDepth else { throw fail("nesting deeper than \(JSON.maxDepth)") }
        guard i < buf.count else { throw fail("unexpected end") }
        switch buf[i] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth)
        case UInt8(ascii: "["): return try parseArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw fail("unexpected character")
        }
    }

    mutating func literal(_ word: StaticString) throws(JSONParseError) {
        let n = word.utf8CodeUnitCount
        guard buf.count - i >= n else { throw fail("unexpected end") }
        let p = word.utf8Start
        for k in 0..<n where buf[i + k] != p[k] { throw fail("invalid literal") }
        i += n
    }

    mutating func parseObject(depth: Int) throws(JSONParseError) -> JSON {
        i += 1
        var members: [String: JSON] = [:]
        skipSpace()
        if i < buf.count, buf[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
        while true {
            skipSpace()
            guard i < buf.count, buf[i] == UInt8(ascii: "\"") else { throw fail("expected a member name") }
            let key = try parseString()
            skipSpace()
            guard i < buf.count, buf[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            i += 1
            skipSpace()
            members[key] = try parseValue(depth: depth + 1)
            skipSpace()
            guard i < buf.count else { throw fail("unexpected end") }
            if buf[i] == UInt8(ascii: ",") { i += 1; continue }
            if buf[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
            throw fail("expected ',' or '}'")
        }
    }

    mutating func parseArray(depth: Int) throws(JSONParseError) -> JSON {
        i += 1
        var elements: [JSON] = []
        skipSpace()
        if i < buf.count, buf[i] == UInt8(ascii: "]") { i += 1; return .array(elements) }
        while true {
            skipSpace()
            elements.append(try parseValue(depth: depth + 1))
            skipSpace()
            guard i < buf.count else { throw fail("unexpected end") }
            if buf[i] == UInt8(ascii: ",") { i += 1; continue }
            if buf[i] == UInt8(ascii: "]") { i += 1; return .array(elements) }
            throw fail("expected ',' or ']'")
        }
    }

    mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard buf.count - i >= 4 else { throw fail("short \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = buf[i]
            let d: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw fail("bad hex digit")
            }
            v = v << 4 | d
            i += 1
        }
        return v
    }

    mutating func parseString() throws(JSONParseError) -> String {
        i += 1  // opening quote
        let start = i
        // Fast path: no escapes.
        while i < buf.count {
            let c = buf[i]
            if c == UInt8(ascii: "\"") {
                let s = String(decoding: UnsafeBufferPointer(rebasing: buf[start..<i]), as: UTF8.self)
                i += 1
                return s
            }
            if c == UInt8(ascii: "\\") { break }
            if c < 0x20 { throw fail("control character in string") }
            i += 1
        }
        var out = Array(buf[start..<i])
        while i < buf.count {
            let c = buf[i]
            if c == UInt8(ascii: "\"") {
                i += 1
                return String(decoding: out, as: UTF8.self)
            }
            if c < 0x20 { throw fail("control character in string") }
            if c != UInt8(ascii: "\\") { out.append(c); i += 1; continue }
            i += 1
            guard i < buf.count else { break }
            let e = buf[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C)
            case UInt8(ascii: "/"): out.append(0x2F)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if (0xD800..<0xDC00).contains(scalar) {
                    guard buf.count - i >= 6, buf[i] == UInt8(ascii: "\\"), buf[i + 1] == UInt8(ascii: "u") else {
                        throw fail("lone surrogate")
                    }
                    i += 2
                    let low = try hex4()
                    guard (0xDC00..<0xE000).contains(low) else { throw fail("bad surrogate pair") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00..<0xE000).contains(scalar) {
                    throw fail("lone surrogate")
                }
                guard let u = Unicode.Scalar(scalar) else { throw fail("invalid code point") }
                out.append(contentsOf: Array(String(Character(u)).utf8))
            default: throw fail("bad escape")
            }
        }
        throw fail("unterminated string")
    }

    mutating func parseNumber() throws(JSONParseError) -> JSON {
        let start = i
        var isInteger = true
        if buf[i] == UInt8(ascii: "-") { i += 1 }
        guard i < buf.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(buf[i]) else { throw fail("bad number") }
        if buf[i] == UInt8(ascii: "0") {
            i += 1
        } else {
            while i < buf.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(buf[i]) { i += 1 }
        }
        if i < buf.count, buf[i] == UInt8(ascii: ".") {
            isInteger = false
            i += 1
            guard i < buf.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(buf[i]) else { throw fail("bad number") }
            while i < buf.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(buf[i]) { i += 1 }
        }
        if i < buf.count, buf[i] == UInt8(ascii: "e") || buf[i] == UInt8(ascii: "E") {
            isInteger = false
            i += 1
            if i < buf.count, buf[i] == UInt8(ascii: "+") || buf[i] == UInt8(ascii: "-") { i += 1 }
            guard i < buf.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(buf[i]) else { throw fail("bad number") }
            while i < buf.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(buf[i]) { i += 1 }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: buf[start..<i]), as: UTF8.self)
        if isInteger, let v = Int64(text) { return .int(v) }
        guard let d = Double(text), d.isFinite else { throw fail("number out of range") }
        return .double(d)
    }
}
