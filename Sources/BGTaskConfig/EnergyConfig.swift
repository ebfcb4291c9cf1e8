/// SPEC §16 settings of bgtaskd.conf: `[Refresh] RemoteWakesPerHour=`, `WakeAlignmentSec=` and the
/// `[Buckets]` section (standby buckets and their quotas of background wakes per rolling 24 h).
public struct EnergyConfig: Hashable, Sendable {
    /// `RemoteWakesPerHour=`: remote-notification wakes per app per hour (`nil`: `infinity`, no limit).
    public var remoteWakesPerHour: Int? = 3
    /// `WakeAlignmentSec=`: due tasks are run on slot boundaries this far apart (0: not aligned).
    public var wakeAlignmentUSec: Int64 = 5 * 60 * second
    /// `ActiveBucketSec=`: an app used this recently is in the `active` bucket.
    public var activeBucketUSec: Int64 = 3600 * second
    /// `ActiveQuota=`, `WorkingSetQuota=`, `FrequentQuota=`, `RareQuota=`, `RestrictedQuota=` (`nil`: `infinity`).
    public var activeQuota: Int? = nil
    public var workingSetQuota: Int? = 24
    public var frequentQuota: Int? = 8
    public var rareQuota: Int? = 2
    public var restrictedQuota: Int? = 1

    public init() {}
}

extension DaemonConfig {
    /// `[Refresh]` keys of SPEC §16 (after `ProcessingIdleSec=`).
    static let refreshEnergyKeys: [KeyDefinition<DaemonConfig>] = [
        limit("Refresh", "RemoteWakesPerHour", \.energy.remoteWakesPerHour),
        KeyDefinition(section: "Refresh", key: "WakeAlignmentSec", apply: { config, value throws(ConfigError.Kind) in
            config.energy.wakeAlignmentUSec = value.isEmpty ? EnergyConfig().wakeAlignmentUSec : try parseTime(value, in: 0...(24 * 3600 * second))
        }, format: { SystemdTimeSpan.format($0.energy.wakeAlignmentUSec) }),
    ]

    /// The `[Buckets]` section (last).
    static let bucketKeys: [KeyDefinition<DaemonConfig>] = [
        KeyDefinition(section: "Buckets", key: "ActiveBucketSec", apply: { config, value throws(ConfigError.Kind) in
            config.energy.activeBucketUSec = value.isEmpty ? EnergyConfig().activeBucketUSec : try parseTime(value, in: 0...maxTime)
        }, format: { SystemdTimeSpan.format($0.energy.activeBucketUSec) }),
        limit("Buckets", "ActiveQuota", \.energy.activeQuota),
        limit("Buckets", "WorkingSetQuota", \.energy.workingSetQuota),
        limit("Buckets", "FrequentQuota", \.energy.frequentQuota),
        limit("Buckets", "RareQuota", \.energy.rareQuota),
        limit("Buckets", "RestrictedQuota", \.energy.restrictedQuota),
    ]

    /// A count that may be `infinity` (no limit).
    private static func limit(
        _ section: String, _ key: String, _ field: any WritableKeyPath<DaemonConfig, Int?> & Sendable
    ) -> KeyDefinition<DaemonConfig> {
        KeyDefinition(section: section, key: key, apply: { config, value throws(ConfigError.Kind) in
            if value.isEmpty {
                config[keyPath: field] = DaemonConfig()[keyPath: field]
                return
            }
            if value == "infinity" {
                config[keyPath: field] = nil
                return
            }
            guard let n = parseDecimal(value) else { throw .invalid("expected a count or infinity: \(quoted(value))") }
            guard n >= 0, n <= 1_000_000 else { throw .invalid("must be between 0 and 1000000, or infinity") }
            config[keyPath: field] = n
        }, format: { $0[keyPath: field].map(String.init) ?? "infinity" })
    }
}
