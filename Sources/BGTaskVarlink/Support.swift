#if canImport(Glibc)
import Glibc
#endif

/// CLOCK_MONOTONIC in microseconds (incomplete-message clocks).
func monotonicNowUSec() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1_000
}

/// O_NONBLOCK on a descriptor (listening sockets passed by systemd may come without it).
func setNonBlockingDescriptor(_ fd: Int32) {
    let flags = fcntl(fd, F_GETFL)
    if flags >= 0 { _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
}
