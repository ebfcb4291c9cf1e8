/// SPEC §16: Android's standby buckets, from when the app was last used (in the foreground).
public enum StandbyBucket: String, CaseIterable, Hashable, Sendable, Codable {
    /// In the foreground now, or within `ActiveBucketSec=`.
    case active
    /// Used within 24 hours.
    case workingSet = "working-set"
    /// Used within 7 days.
    case frequent
    /// Used longer ago, or never.
    case rare
    /// `RefreshRestricted=`.
    case restricted
}

/// The `[Buckets]` settings and the remote-notification rate (SPEC §16).
public struct EnergyPolicyConfig: Hashable, Sendable, Codable {
    /// `ActiveBucketSec=`.
    public var activeBucket: TimeSpan
    /// Background wakes for scheduled tasks and remote notifications per rolling 24 h, per bucket
    /// (`nil`: unlimited). `[Buckets] ActiveQuota=`, `WorkingSetQuota=`, `FrequentQuota=`, `RareQuota=`,
    /// `RestrictedQuota=`.
    public var quotas: [StandbyBucket: Int]
    /// `RemoteWakesPerHour=` (`nil`: no limit).
    public var remoteWakesPerHour: Int?
    /// `WakeAlignmentSec=` (zero: wakes are not aligned).
    public var wakeAlignment: TimeSpan

    /// The defaults of SPEC §16.
    public init(
        activeBucket: TimeSpan = .minutes(60),
        quotas: [StandbyBucket: Int] = [.workingSet: 24, .frequent: 8, .rare: 2, .restricted: 1],
        remoteWakesPerHour: Int? = 3, wakeAlignment: TimeSpan = .minutes(5)
    ) {
        self.activeBucket = activeBucket
        self.quotas = quotas
        self.remoteWakesPerHour = remoteWakesPerHour
        self.wakeAlignment = wakeAlignment
    }

    /// The policy of a build before SPEC §16: no quota, no rate, no alignment.
    public static let unlimited = EnergyPolicyConfig(quotas: [:], remoteWakesPerHour: nil, wakeAlignment: .zero)
}

/// What SPEC §16 keeps per app across restarts (part of ``RefreshState``).
public struct EnergyPolicyState: Hashable, Sendable, Codable {
    /// Apps the user closed (`Terminate(userInitiated: true)`) and has not launched since.
    public var closedByUser: Set<AppID> = []
    /// When each app was last in the foreground (wall clock).
    public var lastUsed: [AppID: RealtimeInstant] = [:]
    /// The background wakes each app had for scheduled tasks and remote notifications within the last 24 h.
    public var wakes: [AppID: [RealtimeInstant]] = [:]

    /// Nothing closed, used or woken.
    public init() {}
}

/// A token bucket: `rate` tokens per hour, at most `rate` held (SPEC §16's `RemoteWakesPerHour=`).
struct WakeTokens: Hashable, Sendable, Codable {
    var tokens: Double
    var at: Instant

    /// Takes one token at `now` if there is one.
    mutating func take(rate: Int, now: Instant) -> Bool {
        let elapsed = Double(Swift.max(0, (now - at).microseconds)) / 3_600_000_000
        tokens = Swift.min(Double(rate), tokens + elapsed * Double(rate))
        at = Swift.max(at, now)
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
