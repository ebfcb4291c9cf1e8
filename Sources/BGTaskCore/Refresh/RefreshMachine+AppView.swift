/// What `ListApps` and `GetApp` show of one app's Background App Refresh: the values of `setting(for:)`,
/// `status(for:)`, `denial(_:)`, `pendingCount(for:)` and `bucket(for:now:)`, read with one look-up per
/// table (those getters look the app up again each: 11 look-ups per app, 5 here; 10,000 apps per ListApps).
public struct RefreshAppView: Hashable, Sendable {
    public var setting: Bool
    public var status: RefreshStatus
    public var denial: Reason?
    public var pendingCount: Int
    public var bucket: StandbyBucket

    public init(setting: Bool, status: RefreshStatus, denial: Reason?, pendingCount: Int, bucket: StandbyBucket) {
        self.setting = setting
        self.status = status
        self.denial = denial
        self.pendingCount = pendingCount
        self.bucket = bucket
    }
}

extension RefreshMachine {
    /// `app`'s refresh values at `now` (`RefreshAppView`).
    public func appView(_ app: AppID, now: RealtimeInstant) -> RefreshAppView {
        let configured = config.apps[app]
        let restricted = configured?.restricted ?? false
        let setting = RefreshPolicy.appSetting(
            runTime: state.appSettings[app], manifest: configured?.setting, defaultSetting: config.defaultAppRefresh)
        let policy = self.policy
        return RefreshAppView(
            setting: setting, status: policy.status(enabled: setting, restricted: restricted),
            denial: policy.denial(enabled: setting, restricted: restricted), pendingCount: pendingCount(for: app),
            bucket: bucket(for: app, now: now, restricted: restricted))
    }
}
