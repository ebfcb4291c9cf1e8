// A compact binary form of a ``JSON`` value, for what the daemon keeps in memory and reads back itself (a
// recording's checkpoints, SPEC §17): integers as zig-zag varints, every string (key or value) written once
// and then referred to by its number, arrays and objects closed by a mark (so that an `Encodable` value can
// be written as it encodes, JSON+CompactEncoder.swift, with no tree in between). Exact:
// `JSON(compact: v.compact())` equals `v` (doubles by their bits). Not a file format: the encoding is read
// back only by the process that wrote it.

extension JSON {
    /// This value in the compact binary form.
    public func compact() -> [UInt8] {
        var w = CompactWriter()
        w.bytes.reserveCapacity(4_096)
        w.bytes.append(CompactTag.version)
        w.write(self)
        return w.bytes
    }

    /// The value `bytes` (``compact()``) holds; a coding error if they are not one.
    public init(compact bytes: [UInt8]) throws {
        var r = CompactReader(bytes: bytes)
        guard try r.byte() == CompactTag.version else { throw r.error("not a compact JSON value") }
        self = try r.read()
        guard r.offset == bytes.count else { throw r.error("bytes after the value") }
    }
}

extension [UInt8] {
    /// `v` in LEB128: seven bits a byte, the lowest first, the high bit set on every byte but the last.
    package mutating func appendVarint(_ v: UInt64) {
        var v = v
        while v >= 0x80 {
            append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        append(UInt8(v))
    }
}

private enum CompactTag {
    static let version: UInt8 = 0xB1
    static let null: UInt8 = 0, no: UInt8 = 1, yes: UInt8 = 2, int: UInt8 = 3, double: UInt8 = 4
    static let string: UInt8 = 5, array: UInt8 = 6, object: UInt8 = 7, end: UInt8 = 8
    /// Before a key: the object ends (else ``CompactWriter/string(_:)``'s number).
    static let endOfObject: UInt64 = 0
}

struct CompactWriter {
    var bytes: [UInt8] = []
    var strings: [String: Int] = [:]

    mutating func varint(_ v: UInt64) { bytes.appendVarint(v) }

    /// 1 and the text (its first time), else its number + 2 (0 is ``CompactTag/endOfObject``).
    mutating func string(_ s: String) {
        if let n = strings[s] { return varint(UInt64(n + 2)) }
        strings[s] = strings.count
        varint(1)
        varint(UInt64(s.utf8.count))
        bytes.append(contentsOf: s.utf8)
    }

    mutating func tag(_ t: UInt8) { bytes.append(t) }

    mutating func int(_ i: Int64) {
        bytes.append(CompactTag.int)
        varint(UInt64(bitPattern: (i << 1) ^ (i >> 63)))
    }

    mutating func double(_ d: Double) {
        bytes.append(CompactTag.double)
        varint(d.bitPattern)
    }

    mutating func stringValue(_ s: String) {
        bytes.append(CompactTag.string)
        string(s)
    }

    static var nullTag: UInt8 { CompactTag.null }
    static var arrayTag: UInt8 { CompactTag.array }
    static var objectTag: UInt8 { CompactTag.object }

    /// Closes an array or an object.
    mutating func close(array: Bool) {
        if array { bytes.append(CompactTag.end) } else { varint(CompactTag.endOfObject) }
    }

    mutating func write(_ value: JSON) {
        switch value {
        case .null: bytes.append(CompactTag.null)
        case .bool(let b): bytes.append(b ? CompactTag.yes : CompactTag.no)
        case .int(let i): int(i)
        case .double(let d): double(d)
        case .string(let s): stringValue(s)
        case .array(let items):
            bytes.append(CompactTag.array)
            for item in items { write(item) }
            bytes.append(CompactTag.end)
        case .object(let members):
            bytes.append(CompactTag.object)
            for k in members.keys.sorted() {
                string(k)
                write(members[k] ?? .null)
            }
            varint(CompactTag.endOfObject)
        }
    }
}

private struct CompactReader {
    let bytes: [UInt8]
    var offset = 0
    var strings: [String] = []

    init(bytes: [UInt8]) { self.bytes = bytes }

    func error(_ reason: String) -> JSONCodingError { JSONCodingError([], "compact JSON at byte \(offset): \(reason)") }

    mutating func byte() throws -> UInt8 {
        guard offset < bytes.count else { throw error("ends early") }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func varint() throws -> UInt64 {
        var v: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let b = try byte()
            guard shift < 64 else { throw error("varint too long") }
            v |= UInt64(b & 0x7F) << shift
            if b < 0x80 { return v }
            shift += 7
        }
    }

    mutating func count() throws -> Int {
        let n = try varint()
        // Every element takes a byte at least.
        guard n <= UInt64(bytes.count - offset) else { throw error("count \(n) past the end") }
        return Int(n)
    }

    /// A string; nil: the object ends (``CompactTag/endOfObject``: a key was expected).
    mutating func string() throws -> String? {
        let n = try varint()
        if n == CompactTag.endOfObject { return nil }
        if n > 1 {
            guard n - 2 < UInt64(strings.count) else { throw error("string \(n - 2) not yet defined") }
            return strings[Int(n - 2)]
        }
        let length = try count()
        let s = String(decoding: bytes[offset..<offset + length], as: UTF8.self)
        offset += length
        strings.append(s)
        return s
    }

    mutating func read() throws -> JSON {
        switch try byte() {
        case CompactTag.null: return .null
        case CompactTag.no: return .bool(false)
        case CompactTag.yes: return .bool(true)
        case CompactTag.int:
            let z = try varint()
            return .int(Int64(bitPattern: z >> 1) ^ -Int64(bitPattern: z & 1))
        case CompactTag.double: return .double(Double(bitPattern: try varint()))
        case CompactTag.string:
            guard let s = try string() else { throw error("a string expected") }
            return .string(s)
        case CompactTag.array:
            var items: [JSON] = []
            while offset < bytes.count, bytes[offset] != CompactTag.end { items.append(try read()) }
            _ = try byte()
            return .array(items)
        case CompactTag.object:
            var members: [String: JSON] = [:]
            while let key = try string() { members[key] = try read() }
            return .object(members)
        case let tag:
            throw error("unknown tag \(tag)")
        }
    }
}
