/// A point on the monotonic clock (CLOCK_MONOTONIC), in microseconds. The core never reads a clock:
/// the shell passes the current instant with every input.
public struct Instant: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Microseconds since an arbitrary origin (the shell's CLOCK_MONOTONIC reading).
    public var microseconds: Int64
    /// An instant `microseconds` after the clock's origin.
    public init(microseconds: Int64) { self.microseconds = microseconds }
    /// The clock's origin.
    public static let zero = Instant(microseconds: 0)

    /// Chronological order.
    public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.microseconds < rhs.microseconds }
    /// The instant `span` later (saturating, never traps).
    public static func + (lhs: Instant, rhs: TimeSpan) -> Instant {
        Instant(microseconds: saturatingAdd(lhs.microseconds, rhs.microseconds))
    }
    /// The instant `span` earlier (saturating, never traps).
    public static func - (lhs: Instant, rhs: TimeSpan) -> Instant {
        Instant(microseconds: saturatingSubtract(lhs.microseconds, rhs.microseconds))
    }
    /// The time from `rhs` to `lhs` (negative when `lhs` is earlier; saturating).
    public static func - (lhs: Instant, rhs: Instant) -> TimeSpan {
        TimeSpan(microseconds: saturatingSubtract(lhs.microseconds, rhs.microseconds))
    }
    /// `"<µs>us"`.
    public var description: String { "\(microseconds)us" }
}

/// A length of time in microseconds (systemd's `…USec`). Named `TimeSpan` to stay clear of `Swift.Duration`.
public struct TimeSpan: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The length in microseconds.
    public var microseconds: Int64
    /// A span of `microseconds` µs.
    public init(microseconds: Int64) { self.microseconds = microseconds }
    /// No time at all.
    public static let zero = TimeSpan(microseconds: 0)
    /// A span of `value` µs.
    public static func microseconds(_ value: Int64) -> TimeSpan { TimeSpan(microseconds: value) }
    /// A span of `value` ms (saturating).
    public static func milliseconds(_ value: Int64) -> TimeSpan { TimeSpan(microseconds: saturatingMultiply(value, 1_000)) }
    /// A span of `value` s (saturating).
    public static func seconds(_ value: Int64) -> TimeSpan { TimeSpan(microseconds: saturatingMultiply(value, 1_000_000)) }
    /// A span of `value` min (saturating).
    public static func minutes(_ value: Int64) -> TimeSpan { TimeSpan(microseconds: saturatingMultiply(value, 60_000_000)) }

    /// Shorter first.
    public static func < (lhs: TimeSpan, rhs: TimeSpan) -> Bool { lhs.microseconds < rhs.microseconds }
    /// Sum (saturating).
    public static func + (lhs: TimeSpan, rhs: TimeSpan) -> TimeSpan {
        TimeSpan(microseconds: saturatingAdd(lhs.microseconds, rhs.microseconds))
    }
    /// Difference (saturating).
    public static func - (lhs: TimeSpan, rhs: TimeSpan) -> TimeSpan {
        TimeSpan(microseconds: saturatingSubtract(lhs.microseconds, rhs.microseconds))
    }
    /// Human form for journal messages: `5s`, `1.5s`, `250ms`, `12us`.
    public var description: String {
        let us = microseconds
        if us != 0, us % 1_000_000 == 0 { return "\(us / 1_000_000)s" }
        if us.magnitude >= 1_000_000 {
            let tenths = us / 100_000
            return "\(tenths / 10).\((tenths % 10).magnitude)s"
        }
        if us != 0, us % 1_000 == 0 { return "\(us / 1_000)ms" }
        return "\(us)us"
    }
}

/// A point on the wall clock (CLOCK_REALTIME), microseconds since the Unix epoch (`…RealtimeUSec`).
/// Scheduled tasks' earliest begin dates and journal timestamps use it; budgets never do.
public struct RealtimeInstant: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Microseconds since 1970-01-01T00:00:00Z.
    public var microsecondsSinceEpoch: Int64
    /// The wall-clock instant `microsecondsSinceEpoch` µs after the epoch.
    public init(microsecondsSinceEpoch: Int64) { self.microsecondsSinceEpoch = microsecondsSinceEpoch }
    /// Chronological order.
    public static func < (lhs: RealtimeInstant, rhs: RealtimeInstant) -> Bool {
        lhs.microsecondsSinceEpoch < rhs.microsecondsSinceEpoch
    }
    /// The instant `span` later (saturating).
    public static func + (lhs: RealtimeInstant, rhs: TimeSpan) -> RealtimeInstant {
        RealtimeInstant(microsecondsSinceEpoch: saturatingAdd(lhs.microsecondsSinceEpoch, rhs.microseconds))
    }
    /// `"@<µs>us"`.
    public var description: String { "@\(microsecondsSinceEpoch)us" }
}

func saturatingAdd(_ a: Int64, _ b: Int64) -> Int64 {
    let (r, o) = a.addingReportingOverflow(b)
    return o ? (b > 0 ? .max : .min) : r
}

func saturatingSubtract(_ a: Int64, _ b: Int64) -> Int64 {
    let (r, o) = a.subtractingReportingOverflow(b)
    return o ? (b < 0 ? .max : .min) : r
}

func saturatingMultiply(_ a: Int64, _ b: Int64) -> Int64 {
    let (r, o) = a.multipliedReportingOverflow(by: b)
    return o ? ((a < 0) != (b < 0) ? .min : .max) : r
}
