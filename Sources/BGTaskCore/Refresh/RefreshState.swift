/// What Background App Refresh keeps across restarts and crashes (SPEC §5, §6): the run-time settings,
/// the last conditions set, each app's pending task requests and last refresh. The shell persists it
/// (``RefreshAction/save(_:reply:)``); the ``RefreshMachine`` owns it.
public struct RefreshState: Hashable, Sendable, Codable {
    /// `SetGlobalRefresh`; `nil`: `BackgroundAppRefresh=` of the configuration.
    public var mode: RefreshMode?
    /// `SetLowPowerMode`.
    public var lowPowerMode = false
    /// The last `SetConditions(onExternalPower:)`; automatic detection overrides it where present.
    public var onExternalPower: Bool?
    /// The last `SetConditions(network:)`.
    public var network: NetworkCondition?
    /// `SetRefreshPolicy` per app; apps without an entry use their manifest or `DefaultAppRefresh=`.
    public var appSettings: [AppID: Bool] = [:]
    /// Pending requests and last refreshes.
    public var schedule = TaskSchedule()
    /// SPEC §16: closed by the user, last use, recent wakes (RefreshMachine+Energy.swift).
    public var energy = EnergyPolicyState()

    /// The defaults: nothing set at run time, no request pending.
    public init() {}
}
