import BGTaskConfig

#if canImport(Glibc)
import Glibc
#endif

/// The code pages start-up touched (reading ten thousand manifests, the config, registering the apps) stay
/// mapped, and counted in the daemon's RSS, for its whole life. Once start-up is over this unmaps the
/// program's and its libraries' code (`r-xp` file mappings holding no private copy of a page,
/// `/proc/self/smaps`) with `MADV_DONTNEED`: the pages stay in the page cache, and those the daemon runs
/// again are mapped again at their first use (a minor fault). Nothing else is touched.
enum StartupPages {
    /// Returns the KiB that were mapped in the code it released.
    @discardableResult
    static func release() -> Int {
        guard let smaps = FileIO.read("/proc/self/smaps") else { return 0 }
        var released = 0
        var range: (start: UInt, end: UInt)?
        var rss = 0
        func flush(anonymous: Int) {
            if let r = range, anonymous == 0, r.end > r.start,
                madvise(UnsafeMutableRawPointer(bitPattern: r.start), Int(r.end - r.start), MADV_DONTNEED) == 0
            {
                released += rss
            }
            range = nil
        }
        for line in smaps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let first = fields.first else { continue }
            if first.hasSuffix(":") {
                if first == "Rss:", fields.count > 1 { rss = Int(fields[1]) ?? 0 }
                // "Anonymous:" follows "Rss:" in each mapping's entry: the mapping is complete enough to judge.
                if first == "Anonymous:", fields.count > 1 { flush(anonymous: Int(fields[1]) ?? 1) }
                continue
            }
            // A mapping's first line: "start-end perms offset dev inode path".
            range = nil
            guard fields.count >= 6, fields[1] == "r-xp", fields[5].hasPrefix("/") else { continue }
            let bounds = first.split(separator: "-")
            guard bounds.count == 2, let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16) else { continue }
            range = (start, end)
        }
        return released
    }
}
