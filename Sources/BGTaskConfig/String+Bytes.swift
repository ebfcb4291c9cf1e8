#if canImport(Glibc)
import Glibc
#endif

extension String {
    /// Whether this text comes before `other` in the order of their UTF-8 bytes (String's `<` for ASCII),
    /// compared in place with memcmp: no C string made, no Unicode comparison.
    public func utf8Precedes(_ other: String) -> Bool {
        let fast = utf8.withContiguousStorageIfAvailable { a in
            other.utf8.withContiguousStorageIfAvailable { b -> Bool in
                let n = min(a.count, b.count)
                if n > 0, let pa = a.baseAddress, let pb = b.baseAddress {
                    let c = memcmp(pa, pb, n)
                    if c != 0 { return c < 0 }
                }
                return a.count < b.count
            }
        }
        if let fast, let result = fast { return result }
        return utf8.lexicographicallyPrecedes(other.utf8)
    }
}

/// Sorting many strings by their UTF-8 bytes without reference counting: every key's bytes are copied
/// once into one buffer and the positions are sorted with memcmp over it. Sorting the strings (or
/// tuples holding them) retains and releases each one at every move and comparison: with 10,000 app IDs
/// that was ~5% of a start-up's CPU (`bench/first_answer.py --perf`).
public enum UTF8Order: Sendable {
    /// The positions `0..<keys.count` in the order of `keys`' UTF-8 bytes (`utf8Precedes`); equal keys
    /// keep their order.
    public static func sortedIndices<C: Collection>(_ items: C, key: (C.Element) -> String) -> [Int] {
        var bytes: [UInt8] = []
        var spans: [(start: Int, count: Int)] = []
        spans.reserveCapacity(items.count)
        for item in items {
            let k = key(item)
            let start = bytes.count
            bytes.append(contentsOf: k.utf8)
            spans.append((start, bytes.count - start))
        }
        var order = Array(spans.indices)
        bytes.withUnsafeBufferPointer { b in
            spans.withUnsafeBufferPointer { s in
                let base = b.baseAddress
                order.sort { i, j in
                    let a = s[i], c = s[j]
                    let n = min(a.count, c.count)
                    if n > 0, let base {
                        let r = memcmp(base + a.start, base + c.start, n)
                        if r != 0 { return r < 0 }
                    }
                    return a.count != c.count ? a.count < c.count : i < j
                }
            }
        }
        return order
    }
}
