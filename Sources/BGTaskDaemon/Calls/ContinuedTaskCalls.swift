import BGTaskCore
import BGTaskProtocol
import BGTaskVarlink

// SPEC §16: the continued-task calls decoded into the core's inputs.
extension DaemonService {
    func handleContinuedTask(_ request: VarlinkRequest, _ method: AppMethod, app: AppID, connection: ConnectionID) {
        switch method {
        case .beginContinuedTask:
            guard let call = decode(request, AppWire.BeginContinuedTask.self) else { return }
            let task = ContinuedTaskRequest(
                identifier: call.identifier, title: call.title, subtitle: call.subtitle, totalUnits: call.totalUnits)
            run(.continuedTaskRequested(app, connection: connection, task), for: request)
        case .updateTaskProgress:
            guard let call = decode(request, AppWire.UpdateTaskProgress.self) else { return }
            let progress = TaskProgress(completedUnits: call.completedUnits, totalUnits: call.totalUnits, subtitle: call.subtitle)
            run(.taskProgressReported(app, call.taskId, progress), for: request)
        default:
            request.fail(.methodNotImplemented(request.call.method))
        }
    }

    func handleContinuedTasks(_ request: VarlinkRequest, _ method: ManagerMethod) {
        switch method {
        case .listContinuedTasks:
            request.reply(ManagerWire.ListContinuedTasksReply(tasks: machine.liveContinuedTasks.map { t in
                ManagerWire.ContinuedTask(
                    taskId: t.taskID, appId: t.app.rawValue, identifier: t.identifier, title: t.title,
                    subtitle: t.subtitle, completedUnits: t.completedUnits, totalUnits: t.totalUnits)
            }))
        case .cancelContinuedTask:
            guard let call = decode(request, ManagerWire.CancelContinuedTask.self), let app = knownApp(call.appId, request) else { return }
            run(.continuedTaskCancelled(app, call.taskId), for: request)
        default:
            request.fail(.methodNotImplemented(request.call.method))
        }
    }
}

extension DaemonService {
    /// SPEC §16: a continued task's progress on `Monitor`: a line whose `decision` is `progress` (reason
    /// `app-request`), on the Monitor stream only (not journaled, not in Explain).
    func monitorProgress(_ t: ContinuedTask) {
        guard !monitors.isEmpty else { return }
        let amount = t.totalUnits.map { total in
            total > 0 ? "\(t.completedUnits * 100 / total)% (\(t.completedUnits)/\(total))" : "\(t.completedUnits)/\(total)"
        } ?? "\(t.completedUnits) units"
        var decision = ManagerWire.Decision(
            realtimeUSec: clock.realtime().microsecondsSinceEpoch, appId: t.app.rawValue, decision: .grant,
            reason: .appRequest,
            message: "\(t.app): continued task \(t.taskID.rawValue) \"\(t.title)\"\(t.subtitle.map { " (\($0))" } ?? ""): \(amount)")
        decision.decision = WireEnum(rawValue: "progress")
        let reply = ManagerWire.MonitorReply(decision: decision)
        for m in monitors.values { m.reply(reply, continues: true) }
    }
}
