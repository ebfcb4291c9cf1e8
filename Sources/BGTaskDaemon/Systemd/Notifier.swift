import CSystemd

#if canImport(Glibc)
import Glibc
#endif

/// sd_notify(3) messages for a Type=notify service. Harmless without NOTIFY_SOCKET.
public struct Notifier: Sendable {
    public init() {}

    @discardableResult
    public func notify(_ state: String) -> Bool { sd_notify(0, state) > 0 }

    public func ready(status: String) { notify("READY=1\nSTATUS=\(status)") }
    public func status(_ text: String) { notify("STATUS=\(text)") }
    public func stopping() { notify("STOPPING=1\nSTATUS=Stopping") }
    /// RELOADING=1 carries MONOTONIC_USEC so that systemd (253+) can tell reloads apart.
    public func reloading() { notify("RELOADING=1\nMONOTONIC_USEC=\(Monotonic.nowUSec())\nSTATUS=Reloading") }
    public func watchdog() { notify("WATCHDOG=1") }

    /// The watchdog interval systemd asked for (WATCHDOG_USEC), if any, for this process.
    public var watchdogUSec: UInt64? {
        var usec: UInt64 = 0
        return sd_watchdog_enabled(0, &usec) > 0 && usec > 0 ? usec : nil
    }
}

/// CLOCK_MONOTONIC and CLOCK_REALTIME in microseconds.
public enum Monotonic: Sendable {
    public static func nowUSec() -> Int64 { read(CLOCK_MONOTONIC) }
    public static func realtimeUSec() -> Int64 { read(CLOCK_REALTIME) }

    private static func read(_ clock: clockid_t) -> Int64 {
        var ts = timespec()
        clock_gettime(clock, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
    }
}
