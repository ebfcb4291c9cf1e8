import Glibc

/// One event read from an inotify descriptor.
struct InotifyEvent {
    let wd: Int32
    let mask: UInt32
    /// The name inside a watched directory; empty for an event on the watched file itself.
    let name: String
}

/// Reads every event pending on a non-blocking inotify descriptor, until a read finds none.
/// Shared by the cgroup.events watcher (CgroupTree) and the adoption watcher (AppAdoption).
func readInotifyEvents(_ fd: Int32) -> [InotifyEvent] {
    var events: [InotifyEvent] = []
    var buffer = [UInt8](repeating: 0, count: 8192)
    while true {
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n <= 0 { break }
        var off = 0
        // struct inotify_event { int wd; uint32_t mask, cookie, len; char name[]; }
        while off + 16 <= n {
            let (wd, mask, len) = buffer.withUnsafeBytes { raw in
                (raw.loadUnaligned(fromByteOffset: off, as: Int32.self),
                 raw.loadUnaligned(fromByteOffset: off + 4, as: UInt32.self),
                 raw.loadUnaligned(fromByteOffset: off + 12, as: UInt32.self))
            }
            let nameStart = off + 16
            let nameEnd = min(n, nameStart + Int(len))
            let name = String(decoding: buffer[nameStart..<nameEnd].prefix { $0 != 0 }, as: UTF8.self)
            off = nameStart + Int(len)
            events.append(InotifyEvent(wd: wd, mask: mask, name: name))
        }
    }
    return events
}
