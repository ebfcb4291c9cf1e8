import BGTaskConfig
import BGTaskCore
import BGTaskProtocol
import BGTaskVarlink

// Calls of io.bgtaskd.Manager: decode → feed the core (`run`) or read it → reply. Every method is a
// case of `ManagerMethod`; the switch has no default.
extension DaemonService {
    func handleManager(_ request: VarlinkRequest, _ method: ManagerMethod) {
        if !method.isReadOnly && !mayControl(request) {
            return request.fail(ManagerError.permissionDenied)
        }
        let t = now()
        switch method {
        case .listApps:
            request.reply(listAppsReply(now: t))
        case .getApp:
            guard let call = decode(request, ManagerWire.GetApp.self), let app = knownApp(call.appId, request),
                let snap = machine.app(app, now: t)
            else { return }
            request.reply(ManagerWire.GetAppReply(app: appInfo(snap)))
        case .listAssertions:
            request.reply(ManagerWire.ListAssertionsReply(assertions: machine.assertions(now: t).map(wireAssertion)))
        case .getSettings:
            request.reply(ManagerWire.GetSettingsReply(settings: settings()))
        case .stats:
            request.reply(ManagerWire.StatsReply(stats: stats()))
        case .explain:
            guard let call = decode(request, ManagerWire.ExplainCall.self), let app = knownApp(call.appId, request),
                let snap = machine.app(app, now: t)
            else { return }
            let reasons = (history[app]?.records(app: app) ?? []).suffix(Self.historyLimit).map(wireDecision)
            request.reply(ManagerWire.ExplainReply(state: snap.state, reasons: Array(reasons), causes: causes(app)))
        case .monitor:
            guard request.call.more else { return request.fail(.expectedMore) }
            monitors[ConnectionID(request.connection.id)] = request
        case .launch:
            guard let call = decode(request, ManagerWire.Launch.self), let app = knownApp(call.appId, request) else { return }
            run(.launchRequested(app, background: call.background ?? false, exclusive: true), for: request)
        case .foreground:
            guard let call = decode(request, ManagerWire.Foreground.self), let app = knownApp(call.appId, request) else { return }
            run(.foregroundRequested(app, exclusive: call.exclusive ?? true), for: request)
        case .background:
            guard let call = decode(request, ManagerWire.BackgroundCall.self), let app = knownApp(call.appId, request) else { return }
            run(.backgroundRequested(app), for: request)
        case .setFocus:
            handleSetFocus(request)
        case .setSceneState:
            handleSetSceneState(request)
        case .interrupt:
            guard let call = decode(request, ManagerWire.Interrupt.self), let app = knownApp(call.appId, request) else { return }
            run(.interruptionBegan(app), for: request)
        case .endInterruption:
            guard let call = decode(request, ManagerWire.EndInterruption.self), let app = knownApp(call.appId, request) else { return }
            run(.interruptionEnded(app), for: request)
        case .terminate:
            guard let call = decode(request, ManagerWire.Terminate.self), let app = knownApp(call.appId, request) else { return }
            run(.terminateRequested(app), for: request)
            if call.userInitiated == true { feedRefresh(.closedByUser(app)) }
        case .postNotification:
            guard let call = decode(request, ManagerWire.PostNotification.self) else { return }
            var app: AppID?
            if let raw = call.appId {
                guard let a = knownApp(raw, request) else { return }
                app = a
            }
            let payload = call.payload.map { Payload(json: $0.serialized()) }
            run(.notificationPosted(name: call.name, app: app, payload: payload), for: request)
        case .reload:
            // The caller learns whether the files were good; a bad one keeps the old configuration. The
            // answer comes once the files are read (off the queue) and applied.
            guard let reloadHandler else { return request.reply(ManagerWire.ReloadReply(applied: [], notApplied: [])) }
            reloadHandler { result in
                switch result {
                case .success(let report):
                    request.reply(ManagerWire.ReloadReply(applied: report.applied, notApplied: report.notApplied))
                case .failure(let error):
                    let source = error.source
                    request.fail(ManagerError.invalidConfiguration(
                        message: error.description, file: source?.file,
                        line: source.flatMap { $0.line > 0 ? Int64($0.line) : nil }, key: source?.key))
                }
            }
        case .hold:
            guard request.call.more else { return request.fail(.expectedMore) }
            guard let call = decode(request, ManagerWire.Hold.self), let app = knownApp(call.appId, request) else { return }
            run(.holdRequested(app, connection: ConnectionID(request.connection.id), name: call.name), for: request)
        case .wakeForBusCall:
            guard let call = decode(request, ManagerWire.WakeForBusCall.self), let app = knownApp(call.appId, request) else { return }
            run(.busCallReceived(app, sender: call.sender, member: call.member), for: request)
        case .getRecording:
            sendRecording(request)
        case .listContinuedTasks, .cancelContinuedTask:
            handleContinuedTasks(request, method)  // SPEC §16 (Calls/ContinuedTaskCalls.swift)
        case .setRefreshPolicy, .setGlobalRefresh, .setLowPowerMode, .setConditions, .wakeForRemoteNotification, .runTaskNow:
            // Background App Refresh: the core's refresh machine owns the policy and the scheduled tasks.
            handleRefreshManager(request, method)
        }
    }
}
