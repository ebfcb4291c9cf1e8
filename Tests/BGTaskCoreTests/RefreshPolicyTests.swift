import BGTaskCore
import Testing

/// Background App Refresh policy (SPEC §5): status and denial reasons for every combination.
@Suite struct RefreshPolicyTests {
    @Test func enumsRoundTripToTheirWireStrings() {
        #expect(RefreshStatus.allCases.map(\.rawValue) == ["restricted", "denied", "available"])
        #expect(RefreshMode.allCases.map(\.rawValue) == ["on", "unmetered", "off"])
        #expect(NetworkCondition.allCases.map(\.rawValue) == ["none", "metered", "unmetered"])
        for s in RefreshStatus.allCases { #expect(RefreshStatus(rawValue: s.rawValue) == s) }
        for m in RefreshMode.allCases { #expect(RefreshMode(rawValue: m.rawValue) == m) }
        for n in NetworkCondition.allCases { #expect(NetworkCondition(rawValue: n.rawValue) == n) }
        #expect(RefreshMode(rawValue: "wifi") == nil)
    }

    @Test func availableOnlyWhenEverythingAllowsIt() {
        #expect(RefreshPolicy().status(enabled: true, restricted: false) == .available)
        #expect(RefreshPolicy().denial(enabled: true, restricted: false) == nil)
    }

    /// Every combination of the five inputs, against the SPEC's table written out longhand.
    @Test(arguments: RefreshMode.allCases, NetworkCondition.allCases)
    func statusAndDenialFollowTheSpec(mode: RefreshMode, network: NetworkCondition) {
        for lowPower in [false, true] {
            for enabled in [false, true] {
                for restricted in [false, true] {
                    let policy = RefreshPolicy(mode: mode, lowPowerMode: lowPower, network: network)
                    let status = policy.status(enabled: enabled, restricted: restricted)
                    let denial = policy.denial(enabled: enabled, restricted: restricted)
                    let expectedStatus: RefreshStatus =
                        restricted
                        ? .restricted
                        : (!enabled || mode == .off || lowPower || (mode == .unmetered && network == .metered) ? .denied : .available)
                    #expect(status == expectedStatus)
                    let expectedDenial: Reason? =
                        if restricted { .restricted }
                        else if !enabled || mode == .off { .refreshDisabled }
                        else if lowPower { .lowPowerMode }
                        else if mode == .unmetered && network == .metered { .networkMetered }
                        else { nil }
                    #expect(denial == expectedDenial, "\(mode) \(network) lowPower=\(lowPower) enabled=\(enabled) restricted=\(restricted)")
                    // The status is available exactly when there is no denial (issue 12: the network's included).
                    #expect((status == .available) == (denial == nil))
                }
            }
        }
    }

    @Test func lowPowerModeDeniesEveryAppAndLiftingItRestores() {
        var policy = RefreshPolicy()
        let apps = [(true, false), (false, false), (true, true)]
        let before = apps.map { policy.status(enabled: $0.0, restricted: $0.1) }
        #expect(before == [.available, .denied, .restricted])
        policy.lowPowerMode = true
        #expect(apps.map { policy.status(enabled: $0.0, restricted: $0.1) } == [.denied, .denied, .restricted])
        #expect(policy.denial(enabled: true, restricted: false) == .lowPowerMode)
        policy.lowPowerMode = false
        #expect(apps.map { policy.status(enabled: $0.0, restricted: $0.1) } == before)
    }

    @Test func unmeteredModeOnAMeteredNetworkDeniesRefresh() {
        let policy = RefreshPolicy(mode: .unmetered, network: .metered)
        #expect(policy.status(enabled: true, restricted: false) == .denied)
        #expect(policy.denial(enabled: true, restricted: false) == .networkMetered)
        #expect(RefreshPolicy(mode: .unmetered, network: .unmetered).denial(enabled: true, restricted: false) == nil)
        #expect(RefreshPolicy(mode: .unmetered, network: .none).denial(enabled: true, restricted: false) == nil)
        #expect(RefreshPolicy(mode: .on, network: .metered).denial(enabled: true, restricted: false) == nil)
    }

    @Test func theAppSettingComesFromRunTimeThenManifestThenDefault() {
        #expect(RefreshPolicy.appSetting(runTime: nil, manifest: nil, defaultSetting: true) == true)
        #expect(RefreshPolicy.appSetting(runTime: nil, manifest: nil, defaultSetting: false) == false)
        #expect(RefreshPolicy.appSetting(runTime: nil, manifest: false, defaultSetting: true) == false)
        #expect(RefreshPolicy.appSetting(runTime: true, manifest: false, defaultSetting: false) == true)
        #expect(RefreshPolicy.appSetting(runTime: false, manifest: true, defaultSetting: true) == false)
    }

    @Test func externalPowerFromPowerSupplies() {
        typealias R = PowerSupplyReading
        #expect(R.onExternalPower([]) == nil)
        #expect(R.onExternalPower([R(type: "Mains\n", online: "1\n")]) == true)
        #expect(R.onExternalPower([R(type: "Mains\n", online: "0\n")]) == false)
        // A laptop unplugged: AC offline, battery discharging.
        #expect(R.onExternalPower([R(type: "Mains", online: "0"), R(type: "Battery", status: "Discharging")]) == false)
        // Any external supply online wins (a USB-C charger beside an offline AC adapter).
        #expect(R.onExternalPower([R(type: "Mains", online: "0"), R(type: "USB", online: "1")]) == true)
        // No AC entry: the battery's status says it.
        #expect(R.onExternalPower([R(type: "Battery", status: "Discharging\n")]) == false)
        #expect(R.onExternalPower([R(type: "Battery", status: "Charging")]) == true)
        #expect(R.onExternalPower([R(type: "Battery", status: "Full")]) == true)
        #expect(R.onExternalPower([R(type: "Battery", status: "Not charging")]) == true)
        #expect(R.onExternalPower([R(type: "Battery", status: "Discharging"), R(type: "Battery", status: "Charging")]) == true)
        // Peripherals' batteries say nothing useful without a status.
        #expect(R.onExternalPower([R(type: "Battery")]) == nil)
        #expect(R.onExternalPower([R(type: "Wireless", online: "1")]) == true)
    }
}
