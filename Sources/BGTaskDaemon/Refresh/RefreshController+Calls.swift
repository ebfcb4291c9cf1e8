import BGTaskCore
import BGTaskProtocol
import BGTaskVarlink

/// The refresh calls decoded (the contract's structs, BGTaskProtocol/Contract) into the ``RefreshMachine``'s
/// inputs (the machine answers them).
extension RefreshController {
    /// io.bgtaskd.App methods not handled by the service; false: not one of ours.
    func handleApp(_ request: VarlinkRequest, app: AppID) -> Bool {
        guard let method = AppMethod(request.call) else { return false }
        switch method {
        case .submitTaskRequest:
            guard let call = decode(request, AppWire.SubmitTaskRequest.self) else { return true }
            let task = TaskRequest(
                identifier: call.identifier, kind: call.kind,
                earliestBegin: call.earliestBeginUSec.map { RealtimeInstant(microsecondsSinceEpoch: $0) },
                requiresNetwork: call.requiresNetwork ?? false, requiresExternalPower: call.requiresExternalPower ?? false)
            feed(.taskSubmitted(app, task), call: request)
        case .cancelTaskRequest:
            guard let call = decode(request, AppWire.CancelTaskRequest.self) else { return true }
            feed(.taskCancelled(app, identifier: call.identifier), call: request)
        case .cancelAllTaskRequests:
            feed(.allTasksCancelled(app), call: request)
        case .pendingTaskRequests:
            request.reply(AppWire.PendingTaskRequestsReply(requests: machine.requests(for: app).map(Self.wireRequest)))
        case .completeTask:
            guard let call = decode(request, AppWire.CompleteTask.self) else { return true }
            host?.run(.taskCompleted(app, identifier: call.identifier, success: call.success), for: request, answer: nil)
        case .checkIn, .acknowledge, .beginBackgroundTask, .endBackgroundTask, .backgroundTimeRemaining, .beginActivity,
            .endActivity, .refreshStatus, .beginContinuedTask, .updateTaskProgress:
            return false
        }
        return true
    }

    /// A pending request as on the wire (`type TaskRequest`).
    static func wireRequest(_ r: TaskRequest) -> AppWire.TaskRequest {
        AppWire.TaskRequest(
            identifier: r.identifier, kind: r.kind, earliestBeginUSec: r.earliestBegin?.microsecondsSinceEpoch,
            requiresNetwork: r.requiresNetwork, requiresExternalPower: r.requiresExternalPower)
    }

    /// The call's parameters as `T`, or nil once the call has failed with `InvalidParameter`.
    private func decode<T: WireMessage>(_ request: VarlinkRequest, _: T.Type) -> T? {
        do {
            return try request.call.decode(T.self)
        } catch {
            request.fail(error)
            return nil
        }
    }

    /// io.bgtaskd.Manager methods not handled by the service; false: not one of ours. The service has
    /// already refused control methods to callers that may not control (root or `ControlGroup=`);
    /// `appParameter` answers `NoSuchApp` and `InvalidParameter` itself.
    func handleManager(_ request: VarlinkRequest, appParameter: (VarlinkRequest) -> AppID?) -> Bool {
        guard let method = ManagerMethod(request.call) else { return false }
        switch method {
        case .setRefreshPolicy:
            guard let app = appParameter(request), let call = decode(request, ManagerWire.SetRefreshPolicy.self) else { return true }
            feed(.appSettingRequested(app, enabled: call.enabled), call: request)
        case .setGlobalRefresh:
            guard let call = decode(request, ManagerWire.SetGlobalRefresh.self) else { return true }
            feed(.globalModeRequested(call.mode), call: request)
        case .setLowPowerMode:
            guard let call = decode(request, ManagerWire.SetLowPowerMode.self) else { return true }
            feed(.lowPowerModeRequested(call.enabled), call: request)
        case .setConditions:
            guard let call = decode(request, ManagerWire.SetConditions.self) else { return true }
            feed(.conditionsRequested(onExternalPower: call.onExternalPower, network: call.network), call: request)
        case .wakeForRemoteNotification:
            guard let app = appParameter(request), let call = decode(request, ManagerWire.WakeForRemoteNotification.self) else {
                return true
            }
            feed(.remoteNotificationRequested(app), call: request, payload: call.payload.map { Payload(json: $0.serialized()) })
        case .runTaskNow:
            guard let app = appParameter(request), let call = decode(request, ManagerWire.RunTaskNow.self) else { return true }
            feed(.runNowRequested(app, identifier: call.identifier), call: request)
        case .listApps, .getApp, .listAssertions, .getSettings, .explain, .monitor, .stats, .launch, .foreground, .background,
            .setFocus, .setSceneState, .interrupt, .endInterruption, .terminate, .postNotification, .reload, .hold, .wakeForBusCall,
            .getRecording, .listContinuedTasks, .cancelContinuedTask:
            return false
        }
        return true
    }
}
