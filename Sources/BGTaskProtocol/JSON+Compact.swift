// A compact binary form of a ``JSON`` value, for what the daemon keeps in memory and reads back itself (a
// recording's checkpoints, SPEC §17): integers as zig-zag varints, every string (key or value) written once
// and then referred to by its number, and an object's keys written once per set of keys (its shape), its
// values after a shape's number. Exact: `JSON(compact: v.compact())` equals `v` (doubles by their bits).
// Not a file format: the encoding is read back only by the process that wrote it.

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

private enum CompactTag {
    static let version: UInt8 = 0xB1
    static let null: UInt8 = 0, no: UInt8 = 1, yes: UInt8 = 2, int: UInt8 = 3, double: UInt8 = 4
    static let string: UInt8 = 5, array: UInt8 = 6, newShape: UInt8 = 7, shape: UInt8 = 8
}

private struct CompactWriter {
    var bytes: [UInt8] = []
    var strings: [String: Int] = [:]
    var shapes: [[String]: Int] = [:]

    mutating func varint(_ v: UInt64) {
        var v = v
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    /// 0 and the text (its first time), else its number + 1.
    mutating func string(_ s: String) {
        if let n = strings[s] { return varint(UInt64(n + 1)) }
        strings[s] = strings.count
        varint(0)
        varint(UInt64(s.utf8.count))
        bytes.append(contentsOf: s.utf8)
    }

    mutating func write(_ value: JSON) {
        switch value {
        case .null: bytes.append(CompactTag.null)
        case .bool(let b): bytes.append(b ? CompactTag.yes : CompactTag.no)
        case .int(let i):
            bytes.append(CompactTag.int)
            varint(UInt64(bitPattern: (i << 1) ^ (i >> 63)))
        case .double(let d):
            bytes.append(CompactTag.double)
            varint(d.bitPattern)
        case .string(let s):
            bytes.append(CompactTag.string)
            string(s)
        case .array(let items):
            bytes.append(CompactTag.array)
            varint(UInt64(items.count))
            for item in items { write(item) }
        case .object(let members):
            let keys = members.keys.sorted()
            if let n = shapes[keys] {
                bytes.append(CompactTag.shape)
                varint(UInt64(n))
            } else {
                shapes[keys] = shapes.count
                bytes.append(CompactTag.newShape)
                varint(UInt64(keys.count))
                for k in keys { string(k) }
            }
            for k in keys { write(members[k] ?? .null) }
        }
    }
}

private struct CompactReader {
    let bytes: [UInt8]
    var offset = 0
    var strings: [String] = []
    var shapes: [[String]] = []

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

    mutating func string() throws -> String {
        let n = try varint()
        if n > 0 {
            guard n <= UInt64(strings.count) else { throw error("string \(n - 1) not yet defined") }
            return strings[Int(n - 1)]
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
        case CompactTag.string: return .string(try string())
        case CompactTag.array:
            let n = try count()
            var items: [JSON] = []
            items.reserveCapacity(n)
            for _ in 0..<n { items.append(try read()) }
            return .array(items)
        case CompactTag.newShape:
            let n = try count()
            var keys: [String] = []
            keys.reserveCapacity(n)
            for _ in 0..<n { keys.append(try string()) }
            shapes.append(keys)
            return try members(keys)
        case CompactTag.shape:
            let n = try varint()
            guard n < UInt64(shapes.count) else { throw error("shape \(n) not yet defined") }
            return try members(shapes[Int(n)])
        case let tag:
            throw error("unknown tag \(tag)")
        }
    }

    private mutating func members(_ keys: [String]) throws -> JSON {
        var members: [String: JSON] = [:]
        members.reserveCapacity(keys.count)
        for k in keys { members[k] = try read() }
        return .object(members)
    }
}
