import BGTaskCore

#if canImport(Glibc)
import Glibc
#endif

/// The `cgroup.freeze` files of the apps frozen last, kept open from an app's freeze until its cgroup is
/// released: the thaw of a tapped app is one `pwrite` (the resume path, SPEC §2 row 3), not a path walk
/// through the cgroup tree, a write and a close. At most `limit` are kept, the least recently frozen closed
/// first: with 10,000 apps frozen the daemon holds 64 of them.
struct FreezeDescriptors {
    static let limit = 64
    private var fds: [AppID: Int32] = [:]
    /// Least recently frozen first.
    private var order: [AppID] = []

    var count: Int { fds.count }

    /// Writes `value` to `app`'s `cgroup.freeze` at `path` through the kept descriptor, or opens (and keeps)
    /// one. Returns 0 or the errno of the failure.
    mutating func write(_ app: AppID, _ value: UInt8, path: @autoclosure () -> String) -> Int32 {
        if let fd = fds[app] {
            if Self.write(fd, value) == 0 { return 0 }
            // Stale (the cgroup was removed and made again): open it afresh.
            close(app)
        }
        let fd = open(path(), O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return errno }
        let e = Self.write(fd, value)
        guard e == 0 else {
            Glibc.close(fd)
            return e
        }
        if fds.count >= Self.limit, let oldest = order.first { close(oldest) }
        fds[app] = fd
        order.append(app)
        return 0
    }

    /// Writes `value` through the kept descriptor only (nil: none kept). A failure closes it.
    mutating func writeKept(_ app: AppID, _ value: UInt8) -> Int32? {
        guard let fd = fds[app] else { return nil }
        let e = Self.write(fd, value)
        if e != 0 { close(app) }
        return e
    }

    /// Closes `app`'s descriptor, if one is kept.
    mutating func close(_ app: AppID) {
        guard let fd = fds.removeValue(forKey: app) else { return }
        if let k = order.firstIndex(of: app) { order.remove(at: k) }
        Glibc.close(fd)
    }

    mutating func closeAll() {
        for fd in fds.values { Glibc.close(fd) }
        fds.removeAll()
        order.removeAll()
    }

    private static func write(_ fd: Int32, _ value: UInt8) -> Int32 {
        var byte = value
        let n = pwrite(fd, &byte, 1, 0)
        if n < 0 { return errno }
        return n == 1 ? 0 : EIO
    }
}
