/// A JSON value as Varlink carries it.
///
/// Integers are kept exact (`int`) apart from other numbers (`double`) because durations travel as
/// microseconds and must not lose precision. Objects keep no key order; `serialized()` writes keys
/// sorted so that output is deterministic (golden tests, logs).
public enum JSON: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    /// The member `key` of an object, or nil.
    public subscript(key: String) -> JSON? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    public var intValue: Int64? {
        switch self {
        case .int(let i): return i
        case .double(let d) where d.rounded() == d && abs(d) < 9.2e18: return Int64(d)
        default: return nil
        }
    }

    public var doubleValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    public var objectValue: [String: JSON]? {
        if case .object(let o) = self { return o }
        return nil
    }

    public var arrayValue: [JSON]? {
        if case .array(let a) = self { return a }
        return nil
    }

    public var isNull: Bool { self == .null }
}

extension JSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral, ExpressibleByFloatLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSON)...) {
        var o: [String: JSON] = [:]
        for (k, v) in elements { o[k] = v }
        self = .object(o)
    }
    public init(nilLiteral: ()) { self = .null }
    public init(floatLiteral value: Double) { self = .double(value) }
}

// MARK: - Serialization

extension JSON {
    /// Compact JSON text as UTF-8 bytes appended to `out`.
    public func write(into out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
        case .bool(let b):
            if b {
                out.append(contentsOf: [0x74, 0x72, 0x75, 0x65])  // true
            } else {
                out.append(contentsOf: [0x66, 0x61, 0x6C, 0x73, 0x65])  // false
            }
        case .int(let i): JSON.writeInt(i, into: &out)
        case .double(let d):
            if d.isFinite {
                if d.rounded() == d && abs(d) < 1e15 {
                    out.append(contentsOf: String(Int64(d)).utf8)
                } else {
                    out.append(contentsOf: "\(d)".utf8)
                }
            } else {
                out.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])  // JSON has no NaN/inf
            }
        case .string(let s): JSON.writeString(s, into: &out)
        case .array(let a):
            out.append(UInt8(ascii: "["))
            for (i, v) in a.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                v.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let o):
            out.append(UInt8(ascii: "{"))
            if o.count == 1, let (key, v) = o.first {
                // Nothing to sort (most replies): no key array, no second look-up.
                JSON.writeString(key, into: &out)
                out.append(UInt8(ascii: ":"))
                v.write(into: &out)
            } else {
                // Keys in order, so that the same value always gives the same bytes.
                var first = true
                for (key, v) in o.sorted(by: { $0.key < $1.key }) {
                    if !first { out.append(UInt8(ascii: ",")) }
                    first = false
                    JSON.writeString(key, into: &out)
                    out.append(UInt8(ascii: ":"))
                    v.write(into: &out)
                }
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Compact JSON text.
    public func serialized() -> String {
        var out: [UInt8] = []
        write(into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// An integer's decimal digits, without a String in between.
    static func writeInt(_ value: Int64, into out: inout [UInt8]) {
        if value < 0 {
            out.append(UInt8(ascii: "-"))
            if value == .min {
                out.append(contentsOf: "9223372036854775808".utf8)
                return
            }
        }
        var v = UInt64(value.magnitude)
        var digits: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                     UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var n = 0
        withUnsafeMutableBytes(of: &digits) { raw in
            let d = raw.bindMemory(to: UInt8.self)
            repeat {
                d[n] = UInt8(ascii: "0") + UInt8(v % 10)
                v /= 10
                n += 1
            } while v > 0
            var k = n
            while k > 0 {
                k -= 1
                out.append(d[k])
            }
        }
    }

    static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var s = s
        let plain = s.withUTF8 { bytes -> Bool in
            // Most strings need no escape: one scan, one copy.
            for b in bytes where b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") { return false }
            out.append(contentsOf: bytes)
            return true
        }
        if plain {
            out.append(UInt8(ascii: "\""))
            return
        }
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "\""): out.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): out.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(b >> 4)], hex[Int(b & 0xF)]])
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

// MARK: - Parsing

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
