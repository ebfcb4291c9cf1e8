import BGTaskCore
import BGTaskProtocol

// SPEC §13: `io.bgtaskd.Manager.SetFocus`, called by bgtaskd-focus from the compositor's toplevels.
extension DaemonService {
    /// The reasons a focus change may carry.
    static let focusReasons: [String: Reason] = [
        Reason.compositorFocus.rawValue: .compositorFocus, Reason.screenLocked.rawValue: .screenLocked,
    ]

    func handleSetFocus(_ request: VarlinkRequest) {
        let p = request.call.parameters
        guard let raw = p["reason"]?.stringValue, let reason = Self.focusReasons[raw] else {
            return request.fail(.invalidParameter("reason"))
        }
        var app: AppID?
        if let value = p["appId"], value != .null {
            guard let id = appParameter(request, prefix: Interfaces.managerName) else { return }
            app = id
        }
        run(.focusChanged(app, reason: reason), for: request)
    }
}
