import BGTaskConfig
import BGTaskCore

// SPEC §16 in the refresh controller: the configuration's energy policy, closed-by-user, used-by-user.
extension RefreshController {
    /// `[Buckets]`, `RemoteWakesPerHour=`, `WakeAlignmentSec=` as the machine takes them.
    static func energyPolicy(_ e: EnergyConfig) -> EnergyPolicyConfig {
        var quotas: [StandbyBucket: Int] = [:]
        quotas[.active] = e.activeQuota
        quotas[.workingSet] = e.workingSetQuota
        quotas[.frequent] = e.frequentQuota
        quotas[.rare] = e.rareQuota
        quotas[.restricted] = e.restrictedQuota
        return EnergyPolicyConfig(
            activeBucket: .microseconds(e.activeBucketUSec), quotas: quotas, remoteWakesPerHour: e.remoteWakesPerHour,
            wakeAlignment: .microseconds(e.wakeAlignmentUSec))
    }

    /// `Terminate(userInitiated: true)`: the app is closed until the user launches it again.
    func closedByUser(_ app: AppID) { feed(.closedByUser(app)) }

    /// The app's standby bucket now (`AppInfo.bucket`).
    func bucket(for app: AppID) -> StandbyBucket { machine.bucket(for: app, now: clock.realtime()) }
}
