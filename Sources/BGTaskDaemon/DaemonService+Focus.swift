import BGTaskCore
import BGTaskProtocol
import BGTaskVarlink

// SPEC §13: `io.bgtaskd.Manager.SetFocus`, called by bgtaskd-focus from the compositor's toplevels.
extension DaemonService {
    func handleSetFocus(_ request: VarlinkRequest) {
        // The struct accepts only the reasons a focus change may carry (compositor-focus, screen-locked).
        guard let call = decode(request, ManagerWire.SetFocus.self) else { return }
        var app: AppID?
        if let raw = call.appId {
            guard let id = knownApp(raw, request) else { return }
            app = id
        }
        run(.focusChanged(app, reason: call.reason), for: request)
    }
}
