import BGTaskConfig
import BGTaskCore
import BGTaskProtocol
import BGTaskVarlink

#if canImport(Glibc)
import Glibc
#endif

// Calls: decode (the typed structs of BGTaskProtocol's contract) → feed the core (`run`) → reply
// (Replies.swift). Every method of io.bgtaskd.App is a case of `AppMethod`; the switch has no default.
extension DaemonService {
    func handle(_ request: VarlinkRequest) {
        if let method = AppMethod(request.call) {
            handleApp(request, method)
        } else if let method = ManagerMethod(request.call) {
            handleManager(request, method)
        } else {
            // The server dispatches only the methods of the interfaces this service publishes.
            request.fail(.methodNotFound(request.call.method))
        }
    }

    /// The call's parameters as `T`, or nil once the call has failed with `InvalidParameter`.
    func decode<T: WireMessage>(_ request: VarlinkRequest, _: T.Type) -> T? {
        do {
            return try request.call.decode(T.self)
        } catch {
            request.fail(error)
            return nil
        }
    }

    /// The app a call names (`appId`): `InvalidParameter` when it is missing or not a string, the
    /// interface's `NoSuchApp` when no manifest has it.
    func appParameter(_ request: VarlinkRequest, prefix: String = "") -> AppID? {
        let raw: String
        do {
            raw = try WireAppID.of(request.call)
        } catch {
            request.fail(error.varlinkError)
            return nil
        }
        return knownApp(raw, request)
    }

    /// `raw` as a configured app, or nil once the call has failed with its interface's `NoSuchApp`.
    func knownApp(_ raw: String, _ request: VarlinkRequest) -> AppID? {
        // `index(forKey:)`: whether there is a manifest, without copying it out (once per call).
        guard let id = AppID(raw), config.manifests.index(forKey: id) != nil else {
            request.fail(noSuchApp(raw, request))
            return nil
        }
        return id
    }

    func noSuchApp(_ raw: String, _ request: VarlinkRequest) -> VarlinkError {
        request.call.interface == AppMethod.interface[...]
            ? AppError.noSuchApp(appId: raw).varlinkError : ManagerError.noSuchApp(appId: raw).varlinkError
    }

    /// The uid an app is shown and journaled with: the owner of its first adopted instance (SPEC §13: the
    /// user manager it runs under), else its `User=` (as registered), else the daemon's own. Who may call
    /// for it is the core's decision (`LifecycleMachine+Permissions.swift`).
    func expectedUID(_ app: AppID) -> UInt32 {
        adoption?.firstOwnerUID(of: app) ?? uidByApp[app] ?? ownUID
    }

    private func handleApp(_ request: VarlinkRequest, _ method: AppMethod) {
        let conn = ConnectionID(request.connection.id)
        let peer = request.peer

        if method == .acknowledge {
            guard let call = decode(request, AppWire.Acknowledge.self) else { return }
            // The core refuses an event of an app acknowledged by another uid (issue 11).
            return run(.eventAcknowledged(call.eventId, caller: peer.caller), for: request)
        }
        // Every other method names the app: known, and called by its user (or root), before the rest
        // of its parameters are looked at.
        guard let app = appParameter(request) else { return }
        guard permitted(.appCallReceived(app, method: method.rawValue, caller: peer.caller), request) else { return }

        switch method {
        case .acknowledge:
            break  // above
        case .checkIn:
            guard request.call.more else { return request.fail(.expectedMore) }
            // The process is taken as the app's (`checkedIn(_:peer:)`) only once the core accepts it.
            let adopted = adoption?.holds(pid: peer.pid) == true
            let scenes = (try? AppWire.CheckIn(json: request.call.parameters))?.scenes ?? false
            run(scenes ? .appCheckedInForScenes(app, connection: conn, pid: peer.pid, inAdoptedCgroup: adopted)
                       : .appCheckedIn(app, connection: conn, pid: peer.pid, inAdoptedCgroup: adopted), for: request)
        case .beginBackgroundTask:
            guard let call = decode(request, AppWire.BeginBackgroundTask.self) else { return }
            run(.assertionRequested(app, connection: conn, name: call.name), for: request)
        case .endBackgroundTask:
            guard let call = decode(request, AppWire.EndBackgroundTask.self) else { return }
            run(.assertionEndRequested(app, call.taskId), for: request)
        case .backgroundTimeRemaining:
            let remaining = core.lifecycle.backgroundTimeRemaining(of: app, now: now())
            request.reply(AppWire.BackgroundTimeRemainingReply(remainingUSec: remaining?.microseconds))
        case .beginActivity:
            guard let call = decode(request, AppWire.BeginActivity.self) else { return }
            run(.activityRequested(app, connection: conn, mode: call.mode), for: request)
        case .endActivity:
            guard let call = decode(request, AppWire.EndActivity.self) else { return }
            run(.activityEndRequested(app, call.activityId), for: request)
        case .refreshStatus:
            request.reply(AppWire.RefreshStatusReply(status: refreshStatusValue(app)))
        case .beginContinuedTask, .updateTaskProgress:
            handleContinuedTask(request, method, app: app, connection: conn)  // SPEC §16 (Calls/ContinuedTaskCalls.swift)
        case .submitTaskRequest, .cancelTaskRequest, .cancelAllTaskRequests, .pendingTaskRequests, .completeTask:
            // Background App Refresh: the core's refresh machine serves the scheduled task requests.
            handleRefreshApp(request, method, app: app)
        }
    }

    /// The core accepted `peer`'s CheckIn for `app` (its `.checkedIn` reply, sent before the actions the
    /// check-in causes): its process is the app's now. A refused CheckIn moves and watches nothing.
    func checkedIn(_ app: AppID, peer: PeerCredentials) {
        if adoption?.holds(pid: peer.pid) != true {
            // A process in an adopted cgroup stays there; anything else joins the app's own cgroup.
            appByPid[peer.pid] = app
            freezer.attach(app: app, pid: peer.pid)
        }
        launcher.watch(pid: peer.pid)
    }
}
