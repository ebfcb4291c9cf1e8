/// Strings put in the order of their UTF-8 bytes (`String.utf8Precedes`) by keys made once: each string's
/// first 16 bytes as two integers, compared without touching the strings; only strings whose first 16
/// bytes are the same are compared whole. Sorting the strings themselves retained and released both at
/// each of the ~130,000 comparisons 10,000 names take (performance.md, "First answer").
public enum UTF8Order: Sendable {
    /// The indices of `strings`, in the order of their UTF-8 bytes.
    public static func sortedIndices(_ strings: [String]) -> [Int] {
        var keys: [Key] = []
        keys.reserveCapacity(strings.count)
        for i in strings.indices { keys.append(Key(strings[i], index: i)) }
        strings.withUnsafeBufferPointer { s in
            keys.sort { a, b in
                if a.high != b.high { return a.high < b.high }
                if a.low != b.low { return a.low < b.low }
                return s[a.index].utf8Precedes(s[b.index])
            }
        }
        return keys.map(\.index)
    }

    /// A string's first 16 bytes, big-endian (the first byte the most significant), zeros after its end:
    /// keys that differ are in the strings' order; equal keys say nothing (a string may go on, or hold a 0).
    private struct Key {
        var high: UInt64 = 0
        var low: UInt64 = 0
        var index: Int

        init(_ string: String, index: Int) {
            self.index = index
            var n = 0
            for byte in string.utf8 {
                if n < 8 {
                    high |= UInt64(byte) << (56 - 8 * n)
                } else if n < 16 {
                    low |= UInt64(byte) << (56 - 8 * (n - 8))
                } else {
                    break
                }
                n += 1
            }
        }
    }
}
