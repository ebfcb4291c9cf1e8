import BGTaskModel

// The hand-written behaviour of `io.bgtaskd.Manager`'s contract. The method enum (`ManagerMethod`), the
// error enum (`ManagerError`) and the structs (`ManagerWire.*`) are generated from
// varlink/io.bgtaskd.Manager.varlink (Generated/ManagerWire+*.generated.swift); what the IDL cannot say is
// here: who may call what, which calls name only the app, and the checks of values (`validate()`).

extension ManagerMethod {
    /// Open to every local user; the others need root or `ControlGroup=` (SPEC §10).
    public var isReadOnly: Bool {
        switch self {
        case .listApps, .getApp, .listAssertions, .getSettings, .explain, .monitor, .stats, .listContinuedTasks: return true
        default: return false
        }
    }
}

extension ManagerWire {
    /// A call that names only the app.
    public protocol AppOnly: WireMessage {
        var appId: String { get }
        init(appId: String)
    }
}

extension ManagerWire.GetApp: ManagerWire.AppOnly {}
extension ManagerWire.ExplainCall: ManagerWire.AppOnly {}
extension ManagerWire.BackgroundCall: ManagerWire.AppOnly {}
extension ManagerWire.Interrupt: ManagerWire.AppOnly {}
extension ManagerWire.EndInterruption: ManagerWire.AppOnly {}

extension ManagerWire.SetFocus {
    /// compositor-focus or screen-locked.
    public func validate() throws(WireFieldError) {
        guard reason == .compositorFocus || reason == .screenLocked else { throw WireFieldError("reason") }
    }
}

extension ManagerWire.PostNotification {
    public func validate() throws(WireFieldError) {
        guard !name.isEmpty else { throw WireFieldError("name") }
    }
}

extension ManagerWire.WakeForBusCall {
    /// Bus names and members are at most 255 bytes (D-Bus specification).
    public func validate() throws(WireFieldError) {
        guard sender.utf8.count <= 255 else { throw WireFieldError("sender") }
        guard !member.isEmpty, member.utf8.count <= 255 else { throw WireFieldError("member") }
    }
}

extension ManagerWire.RunTaskNow {
    public func validate() throws(WireFieldError) {
        guard !identifier.isEmpty else { throw WireFieldError("identifier") }
    }
}

extension ManagerWire.SetSceneState {
    /// SPEC §15: the reason is the user's or the compositor's; a title and an output name are bounded.
    public func validate() throws(WireFieldError) {
        if let reason, reason != .userRequest, reason != .compositorFocus { throw WireFieldError("reason") }
        if let title, title.utf8.count > 1024 { throw WireFieldError("title") }
        if let output, output.utf8.count > 255 { throw WireFieldError("output") }
    }
}

extension ManagerWire.CancelContinuedTask {
    /// taskId 0 is the invalid identifier.
    public func validate() throws(WireFieldError) {
        guard taskId.rawValue > 0 else { throw WireFieldError("taskId") }
    }
}

extension ManagerWire.AppEnergy {
    /// Every wake, whatever its cause (since accounting began).
    public var totalWakes: Int64 { wakes.values.reduce(0, +) }
    /// Every wake over the last 24 hours.
    public var totalWakes24h: Int64 { wakes24h.values.reduce(0, +) }
}
