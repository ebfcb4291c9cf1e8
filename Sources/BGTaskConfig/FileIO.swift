#if canImport(Glibc)
import Glibc
#endif

/// Small blocking file helpers shared by the configuration loader, bgtaskd and bgtaskd-launcher (config,
/// cgroup, /proc and sysfs files: short reads and writes that never stall). Here, in the lowest module
/// that reads files, so that every other one can use it.
public enum FileIO: Sendable {
    /// The name of a directory entry `readdir` returned (a `dirent` pointer: raw here, because this module
    /// imports Glibc internally).
    public static func name(of entry: UnsafeMutableRawPointer) -> String {
        withUnsafeBytes(of: entry.assumingMemoryBound(to: dirent.self).pointee.d_name) {
            String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    /// A whole (small) file as text, nil on any error.
    public static func read(_ path: String) -> String? {
        readBytes(path).map { String(decoding: $0, as: UTF8.self) }
    }

    /// A whole file's bytes, nil when it cannot be opened or a read fails.
    public static func readBytes(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buf.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { return nil }
            if n == 0 { break }
            out.append(contentsOf: buf[0..<n])
        }
        return out
    }

    /// Writes all of `text` to `fd` (stderr by default), giving up on an error.
    public static func write(_ text: String, to fd: Int32 = 2) {
        var bytes = Array(text.utf8)
        bytes.withUnsafeMutableBytes { raw in
            var off = 0
            while off < raw.count, let base = raw.baseAddress {
                let n = Glibc.write(fd, base + off, raw.count - off)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                off += n
            }
        }
    }

    /// Sets O_NONBLOCK on `fd`.
    public static func setNonBlocking(_ fd: Int32) {
        let flags = fcntl(fd, F_GETFL)
        if flags >= 0 { _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
    }
}
