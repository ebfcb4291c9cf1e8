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
