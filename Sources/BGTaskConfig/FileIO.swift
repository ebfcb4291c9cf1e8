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

    /// Bytes a read takes on the stack first. The files read here (`cpu.stat`, `/proc/PID/cgroup`,
    /// `cgroup.events`, sysfs values) mostly fit, and a zeroed 64 KiB heap buffer per file was most of a
    /// small read's user time (the energy measurement on the resume path reads two); longer files go on
    /// in 64 KiB heap chunks.
    public static let stackBytes = 4096

    /// A whole (small) file as text, nil on any error.
    public static func read(_ path: String) -> String? {
        withContents(of: path) { String(decoding: $0, as: UTF8.self) }
    }

    /// A whole file's bytes, nil when it cannot be opened or a read fails.
    public static func readBytes(_ path: String) -> [UInt8]? {
        withContents(of: path) { Array($0) }
    }

    /// `body` of a whole file's bytes (valid only inside it), nil when it cannot be opened or a read fails.
    static func withContents<T>(of path: String, _ body: (UnsafeBufferPointer<UInt8>) -> T) -> T? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: stackBytes) { stack -> T? in
            guard let base = stack.baseAddress else { return nil }
            var used = 0
            while used < stack.count {
                let n = Glibc.read(fd, base + used, stack.count - used)
                if n < 0 && errno == EINTR { continue }
                if n < 0 { return nil }
                if n == 0 { return body(UnsafeBufferPointer(start: base, count: used)) }
                used += n
            }
            // Longer than the stack's share: the rest read on the heap.
            var bytes = Array(UnsafeBufferPointer(start: base, count: used))
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n < 0 { return nil }
                if n == 0 { break }
                bytes.append(contentsOf: chunk[0..<n])
            }
            return bytes.withUnsafeBufferPointer(body)
        }
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
