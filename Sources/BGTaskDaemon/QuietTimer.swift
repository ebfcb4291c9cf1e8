import CSystemd
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A one-shot timer whose arming wakes no thread: `arm()` makes the `fire` given to `start` run on
/// `queue` `window` later. A timerfd watched by one Dispatch read source made at start-up: arming it is
/// one `timerfd_settime` on the arming thread, and nothing runs until it expires. A Dispatch timer armed
/// each time (`asyncAfter`) first wakes libdispatch's event thread (an eventfd write) to register it —
/// at the end of the daemon's turn, just when a reply or a resumed app should have the CPU. Used for the
/// journal sink's batch window and the energy accounts' save. Without a timerfd (none left) it falls
/// back to `asyncAfter`.
final class QuietTimer: @unchecked Sendable {
    // @unchecked: `source` (a Dispatch source: its methods may be called from any thread) is set once in
    // `init` and only given its handlers and resumed in `start`; the rest is immutable or a Mutex.
    private let fd: Int32
    private let source: (any DispatchSourceRead)?
    private let queue: DispatchQueue
    private let windowNS: Int64
    private let fire = Mutex<(@Sendable () -> Void)?>(nil)

    init(queue: DispatchQueue, window: DispatchTimeInterval) {
        self.queue = queue
        switch window {
        case .seconds(let s): windowNS = Int64(s) * 1_000_000_000
        case .milliseconds(let ms): windowNS = Int64(ms) * 1_000_000
        case .microseconds(let us): windowNS = Int64(us) * 1_000
        case .nanoseconds(let ns): windowNS = Int64(ns)
        default: windowNS = 0
        }
        let fd = bgtaskd_timerfd_create()
        self.fd = fd
        source = fd >= 0 ? DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue) : nil
    }

    deinit { source?.cancel() }

    /// Starts watching: `fire` runs on the queue once per expiry (its owner passes it after its own
    /// `init`, weakly captured: the timer must not keep its owner alive).
    func start(_ fire: @escaping @Sendable () -> Void) {
        self.fire.withLock { $0 = fire }
        guard let source else { return }
        let fd = self.fd
        source.setEventHandler {
            // Cleared first: an arm() after this line is a new expiry and a new event.
            _ = bgtaskd_timerfd_take(fd)
            fire()
        }
        source.setCancelHandler { _ = close(fd) }
        source.resume()
    }

    /// Runs the `fire` given to `start` once, `window` from now (re-arming one not yet expired moves it).
    func arm() { arm(afterNS: windowNS) }

    /// The same, `afterNS` nanoseconds from now instead of the window.
    func arm(afterNS: Int64) {
        if source != nil, afterNS > 0, bgtaskd_timerfd_arm(fd, afterNS) == 0 { return }
        let fire = self.fire.withLock { $0 }
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(afterNS))) { fire?() }
    }
}
