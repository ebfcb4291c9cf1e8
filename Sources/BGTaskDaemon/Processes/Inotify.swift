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
    // Read into uninitialised stack memory: a zeroed 8 KiB array per call was ~8,000 instructions of
    // memset for each freeze's and thaw's one event.
    withUnsafeTemporaryAllocation(byteCount: 8192, alignment: 8) { raw in
        while true {
            let n = read(fd, raw.baseAddress, raw.count)
            if n <= 0 { break }
            let bytes = UnsafeRawBufferPointer(rebasing: raw[0..<n])
            var off = 0
            // struct inotify_event { int wd; uint32_t mask, cookie, len; char name[]; }
            while off + 16 <= n {
                let wd = bytes.loadUnaligned(fromByteOffset: off, as: Int32.self)
                let mask = bytes.loadUnaligned(fromByteOffset: off + 4, as: UInt32.self)
                let len = bytes.loadUnaligned(fromByteOffset: off + 12, as: UInt32.self)
                let nameStart = off + 16
                let nameEnd = min(n, nameStart + Int(len))
                let name = String(decoding: bytes[nameStart..<nameEnd].prefix { $0 != 0 }, as: UTF8.self)
                off = nameStart + Int(len)
                events.append(InotifyEvent(wd: wd, mask: mask, name: name))
            }
        }
    }
    return events
}
