/// Which recorded decisions explain an app's state (`Explain(appId) -> (state, reasons)`, SPEC §10: "why the
/// app is in its state"). A decision is a cause when it moved the app (launch, foreground, background,
/// suspend, resume, terminate) or shaped where it stays (an assertion granted, ended or expiring; a task run
/// or completed; a policy that defers or denies its background work). A refusal is not: it leaves the state
/// as it was, and it may be another caller's (another uid's refused CheckIn). Nor is a notification
/// delivered, queued or dropped (a wake for one is its own `launch` or `resume`), nor the journal's
/// `coalesced` count, nor anything about an unknown (already ended) identifier. The daemon keeps only causes
/// in the history `Explain` reads; `bgtaskctl explain` filters its journal fallback with the same rule.
public enum StateCause: Sendable {
    /// Whether a decision of `kind` for `reason` is one of the causes `Explain` lists.
    public static func explains(_ kind: DecisionKind, _ reason: Reason) -> Bool {
        if reason == .unknownIdentifier { return false }
        switch kind {
        case .launch, .foreground, .background, .suspend, .resume, .terminate: return true
        case .grant, .end, .expire, .runTask, .completeTask, .policy: return true
        case .deny, .notify, .coalesced: return false
        }
    }
}
