import BGTaskModel

/// The MESSAGE_ID of each decision kind (`BGTASKD_DECISION`), made once with `systemd-id128 new`.
/// `systemd/bgtaskd.catalog` documents each one; `systemd/message-ids.txt` lists them for tools. Never change them.
public enum MessageIDs: Sendable {
    /// The MESSAGE_ID of a decision of this kind.
    static func of(_ kind: DecisionKind) -> String {
        switch kind {
        case .launch: "23c8676794f24c1d9d0206500153da03"
        case .foreground: "d9ef0a812d2147f4b58722b1576adb11"
        case .background: "022b176b900f48f3a6644bdfe8013bab"
        case .suspend: "7ec5448d981a451e96ce3ee61130da8a"
        case .resume: "d3293ea428ad411fa84b9f7dcdcf60b8"
        case .terminate: "a8b48b5f47fa433dbd40e3618c3cb1ed"
        case .grant: "f8b10b5352ce46b089a9156c8a39e804"
        case .deny: "39bdbc7b5cbf40749834824079cd2877"
        case .end: "212d42f0da0b45ea8590dbc67629019a"
        case .expire: "c571224ee9b94fe5a69fd9b615dd64c1"
        case .runTask: "a6fe75d4a270477d8c9e6e49684a237a"
        case .completeTask: "7870d78f41c94832a0ed021c487e4908"
        case .notify: "2e739e318a724106ab74b58e87105333"
        case .policy: "6479e7c1bc8c40349d51cb290168cbdd"
        case .coalesced: "6003c06c701d4aaeaff590025241a3a8"
        }
    }

    /// Every decision kind's MESSAGE_ID by its `BGTASKD_DECISION` value.
    public static let byDecision: [String: String] = Dictionary(
        uniqueKeysWithValues: DecisionKind.allCases.map { ($0.rawValue, of($0)) })

    /// Not a decision: the notice that a uid's connections refused a call are not read until the denial
    /// budget's interval ends (`Journal/DenialBudgetMessages.swift`; `connections-paused` in message-ids.txt).
    public static let connectionsPaused = "c7bb95a8e52e429796b92b7aca6eed32"

    /// Not a decision: system sleep is off (no system bus, no logind; SPEC §14), said once
    /// (`system-sleep-off` in message-ids.txt).
    public static let systemSleepOff = "dc5d18c0548c4737ada8a87a5735f68d"
}
