#if canImport(Glibc)
import Glibc
#endif

extension StringProtocol {
    /// Whether `other` occurs in this text, compared byte for byte (UTF-8). The standard library's
    /// `contains(_:)` of a string lives in `_StringProcessing`, which brings the regex parser: 1.8 MB of
    /// shared libraries the installed programs would carry for this alone (docs/performance.md).
    public func containsBytes(_ other: some StringProtocol) -> Bool {
        let needle = Array(other.utf8)
        guard let first = needle.first else { return true }
        let hay = Array(utf8)
        guard hay.count >= needle.count else { return false }
        var i = 0
        while i <= hay.count - needle.count {
            if hay[i] == first, hay[i..<(i + needle.count)].elementsEqual(needle) { return true }
            i += 1
        }
        return false
    }
}

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
