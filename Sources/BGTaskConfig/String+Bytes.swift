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
