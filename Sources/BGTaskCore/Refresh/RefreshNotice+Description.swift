// A refresh decision's subject as the recording's text shows it (SPEC §17: each action is kept as text,
// ``DaemonCore/describe(_:)``): the fact in the words of its setting, so that a reader of a recording sees
// what was decided. The journal's sentence (`MESSAGE`) is the shell's (BGTaskDaemon/Refresh/RefreshMessages.swift).
extension RefreshNotice.Subject: CustomStringConvertible {
    public var description: String {
        switch self {
        case .taskNotRun(let kind, let identifier):
            return "\(kind.rawValue) task \(identifier) not run"
        case .submissionRefused(let kind, let identifier, let mode):
            return "\(kind.rawValue) task request \(identifier) refused" + (mode.map { " (\($0.rawValue) not declared)" } ?? "")
        case .wakeRefused:
            return "remote-notification wake refused"
        case .appSettingRefused:
            return "Background App Refresh not turned on (restricted)"
        case .appSettingSet(let enabled, let status):
            return "Background App Refresh \(enabled ? "on" : "off") for the app (refresh status \(status.rawValue))"
        case .globalModeSet(let mode):
            return "Background App Refresh \(mode.rawValue) for every app"
        case .lowPowerModeSet(let enabled):
            return "Low Power Mode \(enabled ? "on" : "off")"
        case .conditionsSet(let power, let network):
            return "conditions: \(power ? "on external power" : "on battery"), network \(network.rawValue)"
        }
    }
}
