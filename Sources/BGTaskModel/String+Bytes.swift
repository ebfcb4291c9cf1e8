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
