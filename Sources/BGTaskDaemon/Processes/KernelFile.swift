#if canImport(Glibc)
import Glibc
#endif

/// Reads a small kernel file (`cpu.stat`, `/proc/PID/cgroup`, `cgroup.events`) into a buffer on the
/// stack: the energy measurement on the resume path reads two of them, and `FileIO.read`'s 64 KiB
/// zeroed heap buffer per file was most of its user-space time. Longer files fall back to `FileIO`.
enum KernelFile {
    static let stackBytes = 4096

    /// The whole file as text, nil when it cannot be opened or a read fails.
    static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: stackBytes) { buf -> String? in
            guard let base = buf.baseAddress else { return nil }
            var used = 0
            while used < buf.count {
                let n = Glibc.read(fd, base + used, buf.count - used)
                if n < 0 && errno == EINTR { continue }
                if n < 0 { return nil }
                if n == 0 { return String(decoding: UnsafeBufferPointer(start: base, count: used), as: UTF8.self) }
                used += n
            }
            // Longer than the buffer: the rest read on the heap.
            var bytes = Array(UnsafeBufferPointer(start: base, count: used))
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n < 0 { return nil }
                if n == 0 { break }
                bytes.append(contentsOf: chunk[0..<n])
            }
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}
