/// The device conditions scheduled tasks depend on (SPEC §6): from `SetConditions` and, for power,
/// from `/sys/class/power_supply`.
public struct RefreshConditions: Hashable, Sendable {
    /// Whether the device runs on external power (mains, USB, a dock).
    public var onExternalPower: Bool
    /// The network.
    public var network: NetworkCondition

    /// Conditions; by default a machine on mains with an unmetered network (a desktop).
    public init(onExternalPower: Bool = true, network: NetworkCondition = .unmetered) {
        self.onExternalPower = onExternalPower
        self.network = network
    }
}

/// The Background App Refresh policy in force (SPEC §5): the global setting, Low Power Mode and the
/// network, applied to one app's own setting and restriction. Pure: the shell resolves the settings
/// (configuration, manifests, run-time changes) and asks.
public struct RefreshPolicy: Hashable, Sendable {
    /// The global setting.
    public var mode: RefreshMode
    /// Low Power Mode: refresh is denied to every app.
    public var lowPowerMode: Bool
    /// The current network (only `unmetered` mode looks at it).
    public var network: NetworkCondition

    /// A policy; by default refresh on, no Low Power Mode, an unmetered network.
    public init(mode: RefreshMode = .on, lowPowerMode: Bool = false, network: NetworkCondition = .unmetered) {
        self.mode = mode
        self.lowPowerMode = lowPowerMode
        self.network = network
    }

    /// The app's `refreshStatus`: `restricted` (admin), `denied` (app off, global off, Low Power Mode, or global
    /// `unmetered` on a metered network), else `available`. ``denial(enabled:restricted:)`` says which cause.
    public func status(enabled: Bool, restricted: Bool) -> RefreshStatus {
        if restricted { return .restricted }
        if !enabled || mode == .off || lowPowerMode { return .denied }
        if mode == .unmetered && network == .metered { return .denied }
        return .available
    }

    /// Why the daemon may not launch or wake the app now for a task or a remote notification; `nil`: it may.
    ///
    /// The most lasting cause wins: `restricted`, then `refresh-disabled` (the app's or the global setting),
    /// then `low-power-mode`, then `network-metered` (global `unmetered` on a metered network).
    public func denial(enabled: Bool, restricted: Bool) -> Reason? {
        if restricted { return .restricted }
        if !enabled || mode == .off { return .refreshDisabled }
        if lowPowerMode { return .lowPowerMode }
        if mode == .unmetered && network == .metered { return .networkMetered }
        return nil
    }

    /// The app's effective own setting: a run-time change (`SetRefreshPolicy`) wins over the manifest's
    /// `BackgroundAppRefresh=`, which wins over `DefaultAppRefresh=`.
    public static func appSetting(runTime: Bool?, manifest: Bool?, defaultSetting: Bool) -> Bool {
        runTime ?? manifest ?? defaultSetting
    }
}

/// One entry of `/sys/class/power_supply` as the shell read it (`type`, `online`, `status`).
public struct PowerSupplyReading: Hashable, Sendable {
    /// `type`: `Mains`, `USB`, `Battery`, `UPS`, `Wireless`…
    public var type: String
    /// `online` (`1`/`0`), for external supplies.
    public var online: String?
    /// `status` (`Charging`, `Discharging`, `Full`, `Not charging`…), for batteries.
    public var status: String?

    /// A reading.
    public init(type: String, online: String? = nil, status: String? = nil) {
        self.type = type
        self.online = online
        self.status = status
    }

    /// Whether the device is on external power according to these readings; `nil`: they do not say
    /// (no supply at all, as in a VM or a container).
    ///
    /// An external supply (`Mains`, `USB`, `Wireless`, `UPS`) that is online means yes; external supplies
    /// that are all offline mean no; without any, a battery that is discharging means no and one that is
    /// charging, full or not charging means yes.
    public static func onExternalPower(_ readings: [PowerSupplyReading]) -> Bool? {
        func trimmed(_ s: String?) -> String? {
            guard let s else { return nil }
            let t = s.filter { !$0.isWhitespace }
            return t.isEmpty ? nil : t.lowercased()
        }
        let external = readings.filter { ["mains", "usb", "wireless", "ups"].contains(trimmed($0.type) ?? "") }
        let known = external.compactMap { trimmed($0.online) }
        if !known.isEmpty { return known.contains { $0 != "0" } }
        let batteries = readings.filter { trimmed($0.type) == "battery" }.compactMap { trimmed($0.status) }
        guard !batteries.isEmpty else { return nil }
        return !batteries.allSatisfy { $0 == "discharging" }
    }
}
