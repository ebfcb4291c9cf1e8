import BGTaskConfig
import BGTaskCore
import Dispatch
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Registers a PSI trigger ("some <stall> <window>") on `/proc/pressure/memory` (or the apps' cgroup
/// `memory.pressure`) and feeds the core when it fires. No timer: the trigger descriptor signals
/// POLLPRI, which a Dispatch read source cannot ask for (the descriptor always looks readable), so
/// it sits in an epoll set of its own that asks only for EPOLLPRI, and the Dispatch source watches
/// that epoll descriptor.
final class MemoryPressureMonitor {
    let path: String
    /// The trigger as registered (the window may have been rounded up, see `triggerSpec`).
    let stallUSec: Int64
    let windowUSec: Int64
    /// `PressureThreshold=` and `PressureWindowSec=` it was started with.
    private(set) var threshold = Percentage(0)
    private(set) var configuredWindowUSec: Int64 = 0
    private let triggerFD: Int32
    private let epollFD: Int32
    private let source: any DispatchSourceRead
    private let logger: Logger
    private var lastFireUSec: Int64?
    private var rapidFires = 0
    private let feed: (Input) -> Void
    /// Triggers seen (tests, logs).
    private(set) var triggers = 0

    private init(path: String, stallUSec: Int64, windowUSec: Int64, triggerFD: Int32, epollFD: Int32,
                 queue: DispatchQueue, logger: Logger, feed: @escaping (Input) -> Void)
    {
        self.path = path
        self.stallUSec = stallUSec
        self.windowUSec = windowUSec
        self.triggerFD = triggerFD
        self.epollFD = epollFD
        self.logger = logger
        self.feed = feed
        source = DispatchSource.makeReadSource(fileDescriptor: epollFD, queue: queue)
        source.setCancelHandler {
            _ = close(epollFD)
            _ = close(triggerFD)
        }
    }

    deinit { source.cancel() }

    private func resume() {
        source.setEventHandler { [weak self] in self?.fired() }
        source.resume()
    }

    func stop() { source.cancel() }

    /// The stall threshold and window to register: `fraction` of the window, at least 1 µs. Without
    /// CAP_SYS_RESOURCE the kernel (6.5+) only accepts windows that are whole multiples of 2 s, so
    /// `unprivileged` rounds the window up to one and keeps the fraction.
    static func triggerSpec(fraction: Double, windowUSec: Int64, unprivileged: Bool) -> (stallUSec: Int64, windowUSec: Int64) {
        var window = windowUSec
        if unprivileged, window % 2_000_000 != 0 { window = (window / 2_000_000 + 1) * 2_000_000 }
        let stall = min(window, max(1, Int64((Double(window) * fraction).rounded())))
        return (stall, window)
    }

    /// Starts watching when `[Memory] PressureKill=yes`; nil (logged) when PSI is unavailable.
    /// `cgroupPressure`: the apps' cgroup `memory.pressure`, tried when /proc/pressure/memory is not usable.
    static func start(config: DaemonConfig, cgroupPressure: String?, queue: DispatchQueue, logger: Logger,
                      feed: @escaping (Input) -> Void) -> MemoryPressureMonitor?
    {
        guard config.pressureKill else { return nil }
        guard EPoll.available else {
            logger.warning("PressureKill=yes but epoll is not available: memory pressure is not watched")
            return nil
        }
        // System-wide pressure is what matters for reclaiming memory for the foreground; the apps'
        // own cgroup only sees stalls of the apps themselves.
        var failures: [String] = []
        for path in ["/proc/pressure/memory", cgroupPressure].compactMap({ $0 }) {
            attempts: for unprivileged in [false, true] {
                let (stall, window) = triggerSpec(
                    fraction: config.pressureThreshold.fraction, windowUSec: config.pressureWindowUSec, unprivileged: unprivileged)
                if unprivileged && window == config.pressureWindowUSec { break }
                switch register(path: path, stallUSec: stall, windowUSec: window) {
                case .success(let fd):
                    let ep = EPoll.create()
                    guard ep >= 0, EPoll.addPriority(ep, fd) == 0 else {
                        let e = errno
                        if ep >= 0 { close(ep) }
                        close(fd)
                        failures.append("\(path): epoll: \(Cgroup.errorText(e))")
                        continue
                    }
                    let monitor = MemoryPressureMonitor(
                        path: path, stallUSec: stall, windowUSec: window, triggerFD: fd, epollFD: ep, queue: queue,
                        logger: logger, feed: feed)
                    monitor.threshold = config.pressureThreshold
                    monitor.configuredWindowUSec = config.pressureWindowUSec
                    monitor.resume()
                    var note = ""
                    if window != config.pressureWindowUSec {
                        note = " (PressureWindowSec=\(config.pressureWindowUSec / 1000)ms rounded up: without CAP_SYS_RESOURCE "
                            + "the kernel takes only multiples of 2 s)"
                    }
                    let message = "watching memory pressure: PSI trigger \"some \(stall) \(window)\" on \(path), i.e. "
                        + "\(config.pressureThreshold) of \(window / 1000) ms\(note)"
                    logger.info("\(message)")
                    return monitor
                case .failure(let e):
                    failures.append("\(path) (\"some \(stall) \(window)\"): \(Cgroup.errorText(e.code))")
                    if e.code != EINVAL { break attempts }
                }
            }
        }
        logger.warning("PressureKill=yes but no PSI trigger could be registered: \(failures.joined(separator: "; "))")
        return nil
    }

    private static func register(path: String, stallUSec: Int64, windowUSec: Int64) -> Result<Int32, Errno> {
        let fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return .failure(Errno(code: errno)) }
        // The kernel replaces the last byte of the write with a NUL: send one.
        var text = Array("some \(stallUSec) \(windowUSec)".utf8)
        text.append(0)
        let n = text.withUnsafeMutableBytes { write(fd, $0.baseAddress, $0.count) }
        if n < 0 {
            let e = errno
            close(fd)
            return .failure(Errno(code: e))
        }
        return .success(fd)
    }

    /// Replaces `current` according to `config` (start, reload).
    static func reconfigure(_ current: MemoryPressureMonitor?, config: DaemonConfig, cgroupPressure: String?,
                            queue: DispatchQueue, logger: Logger, feed: @escaping (Input) -> Void) -> MemoryPressureMonitor?
    {
        if let current, config.pressureKill, current.threshold == config.pressureThreshold,
           current.configuredWindowUSec == config.pressureWindowUSec
        {
            return current
        }
        current?.stop()
        if current != nil && !config.pressureKill { logger.info("no longer watching memory pressure (PressureKill=no)") }
        return start(config: config, cgroupPressure: cgroupPressure, queue: queue, logger: logger, feed: feed)
    }

    private func fired() {
        // Reading the trigger's state consumed it already (the kernel hands out EPOLLPRI once per
        // window); drain the epoll set so that it does not stay readable.
        _ = EPoll.drain(epollFD)
        let now = Monotonic.nowUSec()
        // The kernel fires at most once per window: faster means the descriptor is broken (a removed
        // cgroup reports EPOLLERR for ever). Stop rather than spin.
        if let last = lastFireUSec, now - last < windowUSec / 4 {
            rapidFires += 1
            if rapidFires > 16 {
                logger.warning("the PSI trigger on \(path) keeps firing without pressure: no longer watching memory pressure")
                stop()
                return
            }
            return
        }
        rapidFires = 0
        lastFireUSec = now
        triggers += 1
        // A fact: the core decides whether this warns or reclaims (SPEC §8), and `.memoryPressure` says which.
        feed(.memoryPressureTriggered(window: .microseconds(windowUSec)))
    }

    /// The log line of the core's response to a trigger (journaled: the memory-warning line comes first).
    func log(_ response: MemoryPressureResponse) {
        let psi = readFile(path)?.split(separator: "\n").first.map(String.init) ?? ""
        switch response {
        case .warn:
            logger.notice("memory pressure (\(path): \(psi)): sending memory-warning to background apps")
        case .reclaim(let count):
            logger.notice("memory pressure persists (\(path): \(psi)): terminating \(count) app(s), suspended ones first")
        }
    }
}

struct Errno: Error {
    var code: Int32
}

/// epoll(7), looked up at run time: Swift's Glibc module does not include <sys/epoll.h>.
/// (Moving these three declarations into the CSystemd shim would make this unnecessary.)
enum EPoll {
    private typealias Create1 = @convention(c) (Int32) -> Int32
    private typealias Ctl = @convention(c) (Int32, Int32, Int32, UnsafeMutableRawPointer?) -> Int32
    private typealias Wait = @convention(c) (Int32, UnsafeMutableRawPointer?, Int32, Int32) -> Int32

    private static let functions: (Create1, Ctl, Wait)? = {
        let handle = dlopen(nil, RTLD_NOW)
        guard let c = dlsym(handle, "epoll_create1"), let t = dlsym(handle, "epoll_ctl"), let w = dlsym(handle, "epoll_wait")
        else { return nil }
        return (unsafeBitCast(c, to: Create1.self), unsafeBitCast(t, to: Ctl.self), unsafeBitCast(w, to: Wait.self))
    }()

    static var available: Bool { functions != nil }

    private static let ctlAdd: Int32 = 1
    private static let epollPri: UInt32 = 0x002
    /// struct epoll_event is packed on x86-64 (12 bytes), naturally aligned elsewhere (16 bytes).
    #if arch(x86_64)
    private static let eventSize = 12
    #else
    private static let eventSize = 16
    #endif

    static func create() -> Int32 {
        guard let f = functions else { return -1 }
        return f.0(Int32(O_CLOEXEC))
    }

    /// Adds `fd` to `ep` for EPOLLPRI only.
    static func addPriority(_ ep: Int32, _ fd: Int32) -> Int32 {
        guard let f = functions else { return -1 }
        var event = [UInt8](repeating: 0, count: eventSize)
        event.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: epollPri, toByteOffset: 0, as: UInt32.self)
            raw.storeBytes(of: UInt64(UInt32(bitPattern: fd)), toByteOffset: eventSize - 8, as: UInt64.self)
        }
        return event.withUnsafeMutableBytes { f.1(ep, ctlAdd, fd, $0.baseAddress) }
    }

    /// epoll_wait without blocking; returns the number of events.
    static func drain(_ ep: Int32) -> Int32 {
        guard let f = functions else { return -1 }
        var events = [UInt8](repeating: 0, count: eventSize * 4)
        return events.withUnsafeMutableBytes { f.2(ep, $0.baseAddress, 4, 0) }
    }
}
