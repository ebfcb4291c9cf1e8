/// SPEC §17: what a recording says of an input whose decisions the daemon cannot state. The daemon keeps of
/// each input's actions a fingerprint only, and renders the decisions when the recording is asked for, by
/// feeding the kept inputs again to the checkpoint; when those do not match the fingerprint (the core took
/// another decision than it did live: a bug of its determinism), the input's decisions are this one line.
/// It equals no decision the core takes, so a replay of the file stops there, naming that input.
extension CoreRecording {
    /// How the line begins.
    public static let notKnownPrefix = "not known: the live daemon decided otherwise"

    /// The line for an input the live core answered with `liveActions` actions, and the replay with
    /// `replayedActions` (different ones, or a different number).
    public static func notKnown(liveActions: Int, replayedActions: Int) -> String {
        "\(notKnownPrefix) (\(liveActions) action(s), not kept: their fingerprint does not match the "
            + "\(replayedActions) action(s) the recording's replay takes)"
    }

    /// The inputs whose decisions are ``notKnown(liveActions:replayedActions:)`` lines (their indices).
    public var inputsNotKnown: [Int] {
        inputs.indices.filter { inputs[$0].decisions.contains { $0.hasPrefix(Self.notKnownPrefix) } }
    }
}
