import BGTaskCore

/// The journal's sentences for the ``RefreshMachine``'s decisions (the core gives facts, not text:
/// ``DecisionDetail/refresh(_:)``).
enum RefreshMessages {
    static func message(_ subject: RefreshNotice.Subject, reason: Reason, app id: AppID?) -> String {
        let app = id.map { "\($0)" } ?? "every app"
        switch subject {
        case .taskNotRun(let kind, let identifier):
            return "did not run \(kind.rawValue) task \(identifier) of \(app): \(explain(reason))"
        case .submissionRefused(let kind, let identifier, let mode):
            let why = mode.map { "its manifest does not declare \($0.rawValue)" } ?? explain(reason)
            return "refused \(kind.rawValue) task request \(identifier) of \(app): \(why)"
        case .wakeRefused:
            let why = reason == .modeNotDeclared
                ? "its manifest does not declare \(BackgroundMode.remoteNotification.rawValue)" : explain(reason)
            return "did not wake \(app) for a remote notification: \(why)"
        case .appSettingRefused:
            return "did not turn Background App Refresh on for \(app): the administrator restricted it (RefreshRestricted=yes)"
        case .appSettingSet(let enabled, let status):
            return "Background App Refresh turned \(enabled ? "on" : "off") for \(app) (refresh status: \(status.rawValue))"
        case .globalModeSet(let mode):
            return "Background App Refresh set to \(mode.rawValue) for every app"
        case .lowPowerModeSet(let enabled):
            return enabled ? "Low Power Mode on: Background App Refresh is denied to every app" : "Low Power Mode off"
        case .conditionsSet(let power, let network):
            return "conditions: \(power ? "on external power" : "on battery"), network \(network.rawValue)"
        }
    }

    /// Why the policy denies refresh, as a clause.
    static func explain(_ reason: Reason) -> String {
        switch reason {
        case .restricted: return "its Background App Refresh is restricted by the administrator"
        case .refreshDisabled: return "Background App Refresh is off"
        case .lowPowerMode: return "Low Power Mode is on"
        case .networkMetered: return "the network is metered and Background App Refresh is allowed only on unmetered networks"
        default: return reason.rawValue
        }
    }
}
