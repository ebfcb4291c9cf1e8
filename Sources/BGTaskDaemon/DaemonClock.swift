import BGTaskCore

/// The daemon's two clocks, read in one place: CLOCK_MONOTONIC for the lifecycle core and budgets,
/// CLOCK_REALTIME for scheduled tasks' dates. Tests pass clocks they step by hand.
struct DaemonClock: Sendable {
    /// CLOCK_MONOTONIC.
    var monotonic: @Sendable () -> Instant
    /// CLOCK_REALTIME.
    var realtime: @Sendable () -> RealtimeInstant

    /// The machine's clocks.
    static let system = DaemonClock(
        monotonic: { Instant(microseconds: Monotonic.nowUSec()) },
        realtime: { RealtimeInstant(microsecondsSinceEpoch: Monotonic.realtimeUSec()) })

    /// Both clocks now, for the refresh machine.
    func both() -> RefreshNow { RefreshNow(wall: realtime(), monotonic: monotonic()) }
}
