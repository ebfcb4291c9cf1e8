#if canImport(Glibc)
import Glibc
#endif

/// epoll(7), which Swift's Glibc module does not import (sys/epoll.h is not in it): the three calls are
/// looked up with dlsym and called through C function pointers. x86-64's `struct epoll_event` is packed:
/// 12 bytes, `events` at 0 and `data` at 4.
final class Epoll {
    private typealias Create = @convention(c) (Int32) -> Int32
    private typealias Control = @convention(c) (Int32, Int32, Int32, UnsafeMutableRawPointer?) -> Int32
    private typealias Wait = @convention(c) (Int32, UnsafeMutableRawPointer?, Int32, Int32) -> Int32

    private static let eventSize = 12
    static let input: UInt32 = 0x001  // EPOLLIN

    private let control: Control
    private let wait: Wait
    let fd: Int32
    private let buffer: UnsafeMutableRawPointer
    private let capacity: Int

    init(capacity: Int = 512) {
        #if arch(x86_64)
        guard let c = dlsym(nil, "epoll_create1"), let ctl = dlsym(nil, "epoll_ctl"), let w = dlsym(nil, "epoll_wait") else {
            fail("epoll not found")
        }
        #else
        fail("the epoll shim here assumes x86-64's packed struct epoll_event")
        #endif
        control = unsafeBitCast(ctl, to: Control.self)
        wait = unsafeBitCast(w, to: Wait.self)
        fd = unsafeBitCast(c, to: Create.self)(Int32(O_CLOEXEC))
        guard fd >= 0 else { fail("epoll_create1: \(errnoText())") }
        self.capacity = capacity
        buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity * Self.eventSize, alignment: 8)
    }

    deinit {
        buffer.deallocate()
        close(fd)
    }

    /// Watches `watched` for input (level-triggered).
    func add(_ watched: Int32) {
        var ev = [UInt8](repeating: 0, count: Self.eventSize)
        ev.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: Self.input, toByteOffset: 0, as: UInt32.self)
            raw.storeBytes(of: UInt64(UInt32(bitPattern: watched)), toByteOffset: 4, as: UInt64.self)
            guard control(fd, 1 /* EPOLL_CTL_ADD */, watched, raw.baseAddress) == 0 else { fail("epoll_ctl: \(errnoText())") }
        }
    }

    func remove(_ watched: Int32) {
        var ev = [UInt8](repeating: 0, count: Self.eventSize)
        _ = ev.withUnsafeMutableBytes { control(fd, 2 /* EPOLL_CTL_DEL */, watched, $0.baseAddress) }
    }

    /// Waits up to `timeoutMS` (-1: forever) and returns the ready descriptors.
    func ready(timeoutMS: Int32) -> [Int32] {
        let n = wait(fd, buffer, Int32(capacity), timeoutMS)
        guard n > 0 else { return [] }
        return (0..<Int(n)).map { i in
            Int32(truncatingIfNeeded: buffer.loadUnaligned(fromByteOffset: i * Self.eventSize + 4, as: UInt64.self))
        }
    }
}
