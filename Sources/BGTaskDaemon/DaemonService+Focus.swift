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

// SPEC §15: `io.bgtaskd.Manager.SetSceneState`, from bgtaskd-focus (one scene per toplevel) and bgtaskctl.
extension DaemonService {
    func handleSetSceneState(_ request: VarlinkRequest) {
        guard let call = decode(request, ManagerWire.SetSceneState.self), let app = knownApp(call.appId, request) else { return }
        guard let scene = SceneID(call.sceneId) else {
            return request.fail(.invalidParameter("sceneId"))
        }
        run(.sceneStateChanged(
            app, scene, call.state, title: call.title, output: call.output, reason: call.reason ?? .userRequest), for: request)
    }

    /// `AppInfo.scenes`: the core's scenes with the snapshots kept; empty without scenes.
    func wireScenes(_ app: AppID, in lifecycle: LifecycleMachine) -> [ManagerWire.Scene] {
        lifecycle.scenes(of: app).map {
            let snap = snapshot(of: app, $0.id)
            return ManagerWire.Scene(
                sceneId: $0.id.rawValue, title: $0.title, output: $0.output, state: $0.state, snapshotPath: snap?.path,
                snapshotRealtimeUSec: snap?.realtimeUSec)
        }
    }
}
