import BGTaskClientCore
import BGTaskFocus
import BGTaskProtocol

// SPEC §15: every toplevel of the compositor is reported as a scene of its app (SetSceneState); the
// daemon's core derives the app's state from its scenes.
extension FocusSession {
    func scene(
        _ id: UInt32, appID: String, title: String, output: String?, activated: Bool, minimized: Bool, closed: Bool
    ) {
        guard sceneMode else { return }
        let now = monotonicUSec()
        if closed {
            scenes.toplevelClosed(id, nowUSec: now)
        } else {
            scenes.toplevelChanged(
                id, appID: appID, title: title, output: output, activated: activated, minimized: minimized, nowUSec: now)
        }
    }

    /// Reports what changed once the toplevels have been quiet for the debounce.
    func scenesDue() {
        guard sceneMode else { return }
        for report in scenes.deadlineReached(nowUSec: monotonicUSec()) {
            switch setSceneState(report) {
            case .success:
                scenes.told(report)
                log("\(report.appID) scene \(report.sceneID) is \(report.state)")
            case .failure(let error) where error.errorName == ManagerError.noSuchApp(appId: "").varlinkError.name:
                log("\(report.appID) is not an app of bgtaskd: its windows are not reported")
                scenes.ignore(report.appID)
            case .failure(let error) where error.errorName == "org.varlink.service.MethodNotFound":
                // A daemon without scenes: the front app only, as before.
                log("bgtaskd has no SetSceneState: telling it the front app only (SetFocus)")
                sceneMode = false
                tracker.forget(nowUSec: monotonicUSec())
                return
            case .failure(let error) where error.errorName == ManagerError.invalidState(state: "").varlinkError.name:
                // Not running yet (a window mapped before its app checked in), or terminating: again later.
                log("SetSceneState(\(report.appID), \(report.sceneID), \(report.state)) refused: \(error); trying again")
                scenes.refused(report, nowUSec: monotonicUSec())
            case .failure(let error) where error.errorName != nil:
                // The daemon answered otherwise (PermissionDenied…): told, not worth repeating.
                log("SetSceneState(\(report.appID), \(report.sceneID), \(report.state)) refused: \(error)")
                scenes.told(report)
            case .failure(let error):
                log("SetSceneState failed (\(error)); trying again")
                connection?.close()
                connection = nil
                scenes.forget(nowUSec: monotonicUSec())
                return
            }
        }
    }

    private func setSceneState(_ r: SceneTracker.Report) -> Result<Void, VarlinkClientError> {
        do {
            if connection == nil {
                let c = try VarlinkClientConnection(path: socketPath)
                c.setTimeout(seconds: 5)
                connection = c
            }
            guard let connection, let state = SceneState(rawValue: r.state) else { return .success(()) }
            let call = ManagerWire.SetSceneState(
                appId: r.appID, sceneId: r.sceneID, state: state, title: r.title, output: r.output, reason: .compositorFocus)
            _ = try connection.call(ManagerMethod.setSceneState.qualifiedName, call.json)
            return .success(())
        } catch {
            return .failure(error)
        }
    }
}
