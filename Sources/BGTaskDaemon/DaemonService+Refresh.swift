import BGTaskConfig
import BGTaskCore
import BGTaskProtocol
import BGTaskVarlink
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

// Background App Refresh in the shell (SPEC §5, §6, §16): the refresh calls decoded into the core's inputs
// (the core's refresh machine decides and answers), the state file saved before an answer that says it
// changed, and the one wall-clock timer armed for the core's wall deadline.
extension DaemonService {
    // MARK: - Calls

    /// io.bgtaskd.App's scheduled-task methods, for `app` (known, and called by its user).
    func handleRefreshApp(_ request: VarlinkRequest, _ method: AppMethod, app: AppID) {
        switch method {
        case .submitTaskRequest:
            guard let call = decode(request, AppWire.SubmitTaskRequest.self) else { return }
            let task = TaskRequest(
                identifier: call.identifier, kind: call.kind,
                earliestBegin: call.earliestBeginUSec.map { RealtimeInstant(microsecondsSinceEpoch: $0) },
                requiresNetwork: call.requiresNetwork ?? false, requiresExternalPower: call.requiresExternalPower ?? false)
            runRefresh(.taskSubmitted(app, task), for: request)
        case .cancelTaskRequest:
            guard let call = decode(request, AppWire.CancelTaskRequest.self) else { return }
            runRefresh(.taskCancelled(app, identifier: call.identifier), for: request)
        case .cancelAllTaskRequests:
            runRefresh(.allTasksCancelled(app), for: request)
        case .pendingTaskRequests:
            request.reply(AppWire.PendingTaskRequestsReply(requests: core.refresh.requests(for: app).map(Self.wireRequest)))
        case .completeTask:
            guard let call = decode(request, AppWire.CompleteTask.self) else { return }
            run(.taskCompleted(app, identifier: call.identifier, success: call.success), for: request)
        case .checkIn, .acknowledge, .beginBackgroundTask, .endBackgroundTask, .backgroundTimeRemaining, .beginActivity,
            .endActivity, .refreshStatus, .beginContinuedTask, .updateTaskProgress:
            request.fail(.methodNotImplemented(request.call.method))
        }
    }

    /// io.bgtaskd.Manager's refresh methods (the caller may control: checked by `handleManager`).
    func handleRefreshManager(_ request: VarlinkRequest, _ method: ManagerMethod) {
        switch method {
        case .setRefreshPolicy:
            guard let app = appParameter(request), let call = decode(request, ManagerWire.SetRefreshPolicy.self) else { return }
            runRefresh(.appSettingRequested(app, enabled: call.enabled), for: request)
        case .setGlobalRefresh:
            guard let call = decode(request, ManagerWire.SetGlobalRefresh.self) else { return }
            runRefresh(.globalModeRequested(call.mode), for: request)
        case .setLowPowerMode:
            guard let call = decode(request, ManagerWire.SetLowPowerMode.self) else { return }
            runRefresh(.lowPowerModeRequested(call.enabled), for: request)
        case .setConditions:
            guard let call = decode(request, ManagerWire.SetConditions.self) else { return }
            runRefresh(.conditionsRequested(onExternalPower: call.onExternalPower, network: call.network), for: request)
        case .wakeForRemoteNotification:
            guard let app = appParameter(request), let call = decode(request, ManagerWire.WakeForRemoteNotification.self) else {
                return
            }
            let payload = call.payload.map { Payload(json: $0.serialized()) }
            answering(request) { .remoteNotificationRequested(app, payload: payload, request: $0, from: $1) }
        case .runTaskNow:
            guard let app = appParameter(request), let call = decode(request, ManagerWire.RunTaskNow.self) else { return }
            runRefresh(.runNowRequested(app, identifier: call.identifier), for: request)
        case .listApps, .getApp, .listAssertions, .getSettings, .explain, .monitor, .stats, .launch, .foreground, .background,
            .setFocus, .setSceneState, .interrupt, .endInterruption, .terminate, .postNotification, .reload, .hold, .wakeForBusCall,
            .getRecording, .listContinuedTasks, .cancelContinuedTask:
            request.fail(.methodNotImplemented(request.call.method))
        }
    }

    /// A pending request as on the wire (`type TaskRequest`).
    static func wireRequest(_ r: TaskRequest) -> AppWire.TaskRequest {
        AppWire.TaskRequest(
            identifier: r.identifier, kind: r.kind, earliestBeginUSec: r.earliestBegin?.microsecondsSinceEpoch,
            requiresNetwork: r.requiresNetwork, requiresExternalPower: r.requiresExternalPower)
    }

    /// Feeds a refresh call's input; the core answers it (``CoreAction/answerRefresh(_:to:)``, or once saved).
    func runRefresh(_ input: RefreshInput, for request: VarlinkRequest) {
        answering(request) { .refresh(input, request: $0, from: $1) }
    }

    /// Feeds the input of a call (its request ID and origin given) and answers the call from the core.
    private func answering(_ request: VarlinkRequest, _ input: (RequestID, CallOrigin) -> CoreInput) {
        let id = openRequest(request)
        feedCore(input(id, Self.origin(of: request)))
        if let still = openRequests.removeValue(forKey: id), still.isOpen, !still.call.more {
            // Every request input yields one answer; this is a safety net for invariants.
            still.reply()
        }
    }

    /// Feeds a refresh input that is no call's (start-up, configuration, power, closed by the user).
    func feedRefresh(_ input: RefreshInput) {
        feedFact(.refresh(input, request: nil, from: nil))
    }

    // MARK: - Performing the refresh machine's actions

    /// Answers a refresh call now.
    func answerRefresh(_ reply: RefreshReply, to id: RequestID) {
        guard let request = openRequests.removeValue(forKey: id) else { return }
        Self.sendRefresh(reply, to: request)
    }

    /// Saves the refresh state as it is now (the latest: a copy taken earlier could take the file back); then
    /// answers the call `id` names, if any, once the state is durable (`state-not-saved` if the write failed).
    func saveRefreshState(answer: SavedAnswer?, to id: RequestID?) {
        let request = id.flatMap { openRequests.removeValue(forKey: $0) }
        // The state is read when the write starts, not copied now (StateStore).
        refresh.save(reading: { [weak self] in self?.core.refresh.state }, soon: answer != nil && request != nil) {
            [weak self] saved in
            guard let answer, let request else { return }
            guard saved else { return Self.sendRefresh(.failure(.unavailable(RefreshCallError.stateNotSaved)), to: request) }
            switch answer {
            case .refresh(let reply): Self.sendRefresh(reply, to: request)
            case .lifecycle(let reply): self?.send(reply, to: request)
            }
        }
    }

    /// A refresh answer as the interface of the call names it (the call's decoded interface, not its method
    /// parsed again).
    static func sendRefresh(_ reply: RefreshReply, to request: VarlinkRequest) {
        switch reply {
        case .ok:
            request.reply()
        case .failure(let failure):
            let manager = request.call.interface != AppMethod.interface[...]
            request.fail(RefreshController.wireError(failure, manager: manager))
        }
    }

    // MARK: - The wall-clock timer

    /// Arms the one wall-clock timer for the core's wall deadline (the refresh machine's, SPEC §6), if it
    /// moved; `nil` disarms it.
    func armWallTimer() {
        let deadline = core.refresh.nextWallDeadline
        if deadline == armedWallDeadline { return }
        armedWallDeadline = deadline
        if wallTimer == nil {
            let t = DispatchSource.makeTimerSource(queue: queue)
            t.setEventHandler { [weak self] in
                guard let self else { return }
                self.armedWallDeadline = nil
                self.wallDeadlineReached()
            }
            t.schedule(wallDeadline: .distantFuture)
            t.resume()
            wallTimer = t
        }
        guard let deadline else {
            wallTimer?.schedule(wallDeadline: .distantFuture)
            return
        }
        let us = deadline.microsecondsSinceEpoch
        let spec = timespec(tv_sec: Int(us / 1_000_000), tv_nsec: Int(us % 1_000_000) * 1_000)
        wallTimer?.schedule(wallDeadline: DispatchWallTime(timespec: spec), leeway: .milliseconds(5))
    }

    /// The wall-clock timer fired (early or late is harmless; tests call it by hand).
    func wallDeadlineReached() { feedCore(.wallDeadlineReached) }

    /// The power supply changed (detected, not set by a call).
    func powerDetected(_ onPower: Bool) {
        let before = core.refresh.onExternalPower
        feedRefresh(.powerDetected(onPower))
        if core.refresh.onExternalPower != before { refresh.logPowerChanged(onPower) }
    }

    // MARK: - Reading

    /// The Background App Refresh values in force (`GetSettings`): the global mode, Low Power Mode and the
    /// conditions, as set at run time or detected.
    var refreshPolicyInForce: (mode: RefreshMode, lowPowerMode: Bool, onExternalPower: Bool, network: NetworkCondition) {
        (core.refresh.mode, core.refresh.state.lowPowerMode, core.refresh.onExternalPower, core.refresh.network)
    }

    /// The app's standby bucket now (`AppInfo.bucket`).
    func bucket(for app: AppID) -> StandbyBucket { core.refresh.bucket(for: app, now: clock.realtime()) }
}
