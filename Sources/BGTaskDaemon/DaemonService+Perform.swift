import BGTaskConfig
import BGTaskCore
import BGTaskProtocol
import BGTaskVarlink
import Dispatch
import Logging

#if canImport(Glibc)
import Glibc
#endif

// Performing the core's actions, and answering the calls they reply to.
extension DaemonService {
    /// Performs one action of the core. Every case is spelled out (no `default:`): a new action does not
    /// compile until the shell knows how to perform it. Returns the input it causes, if any. `request`: the
    /// call whose input (or the inputs that followed it) caused the action, if any.
    func perform(_ action: CoreAction, for request: RequestID?) -> CoreInput? {
        switch action {
        case .perform(let action, let journaled, let peer):
            if let d = action.decision {
                record(d, journaled: journaled, peerPID: peer?.pid, held: Self.publishesAfterThaw(action, pendingThaws))
            }
            return performLifecycle(action, for: request)
        case .journalSummaries(let summaries):
            JournalBudgetMessages.journal(summaries, limits: core.journalLimits, sink: journal)
        case .pauseConnection(let origin, let pause):
            // The connection may have closed meanwhile: nothing to hold then.
            guard let connection = server?.connection(origin.connection.rawValue) else { return nil }
            server?.hold(
                connection, newConnectionsOfProcess: pause.holdNewConnections == .caller,
                newConnectionsOfUID: pause.holdNewConnections == .uid)
            if pause.firstOfUID {
                DenialBudgetMessages.journal(pause, caller: origin.caller, limits: core.denialLimits, now: now(), sink: journal)
            }
        case .releasePausedConnections:
            server?.releaseHeld()
        case .checkFreeze(let app, let processes, let late):
            return .freezeChecked(app, freezer.checkFreeze(app: app, pid: processes.pid, late: late))
        case .freezeWithSignals(let app, let processes):
            return .freezeChecked(app, freezer.freezeWithSignals(app: app, pid: processes.pid))
        case .answerRefresh(let reply, let id):
            answerRefresh(reply, to: id)
        case .saveRefreshState(let answer, let id):
            saveRefreshState(answer: answer, to: id)
        case .replyAwaitsLaunch(_, let id):
            // The reply says whether the program could start (issue 12): it comes with the spawn's result.
            if let request = openRequests.removeValue(forKey: id) { launchReplies[id] = request }
        case .answerLaunch(let app, let id, let failure):
            answerLaunch(app, to: id, failure: failure)
        }
        return nil
    }

    /// Performs one action of the lifecycle machine (its decision is journaled already).
    private func performLifecycle(_ action: Action, for cause: RequestID?) -> CoreInput? {
        switch action {
        case .deliver(let app, let conn, let event):
            guard let stream = streams[conn] else { return nil }
            if !pendingThaws.isEmpty { thawedStreams.append(conn) }
            var reply = checkInReply(app: nil, state: event.state, event: event)
            if event.kind == .sceneSnapshot, let scene = event.scene {
                prepareSnapshot(app, scene.id)
                reply.event?.path = snapshotPath(app, scene.id)
            }
            stream.reply(reply, continues: true)
            return nil
        case .launch(let app, _, _):
            guard let manifest = config.manifests[app] else { return fact(.launchFailed(app, message: "no manifest")) }
            let cgroupFD = freezer.prepareLaunch(app: app)
            defer { if let cgroupFD { close(cgroupFD) } }
            if let launcherSocket = config.launcherSocketPath {
                // LauncherSocket=: bgtaskd-launcher starts it (privilege separation); its answer comes
                // later, and the core waits in the meantime (the launch timeout bounds it).
                launcher.spawnRemotely(appID: manifest.id, socketPath: config.socketPath, launcherSocket: launcherSocket,
                                       cgroupProcsFD: cgroupFD) { [weak self] result in
                    self?.remoteLaunchFinished(app, result)
                }
                return nil
            }
            switch launcher.spawn(manifest, socketPath: config.socketPath, cgroupProcsFD: cgroupFD) {
            case .success(let pid):
                appByPid[pid] = app
                return fact(.appLaunched(app, pid: pid))
            case .failure(let error):
                return fact(.launchFailed(app, message: error.description))
            }
        case .freeze(let app, let processes, _):
            checkSnapshots(app)  // SPEC §15: what the app wrote before it stops
            // The core records the suspension once the freeze is done (SPEC §9: suspended only once the
            // processes are stopped): now, or when the parts not done yet have reported it (the core
            // counts them: `freezeStarted`, then `freezePartDone` or `freezeChecked` from each). The own
            // freezer's answer is a fact: when to look again, or to fall back to SIGSTOP, is the core's.
            var awaited = 0
            let own = processes.own ? freezer.freeze(app: app, pid: processes.pid) : .frozen
            if own != .frozen { awaited += 1 }
            if !processes.instances.isEmpty, let adoption {
                switch adoption.freeze(app) {
                case .done: break
                case .pending: awaited += 1
                case .failed(let error):
                    // A write that failed is a failed freeze: the core thaws what did freeze (never suspended).
                    return fact(.freezeFailed(app, error: error))
                }
            }
            return awaited == 0 ? fact(.freezeConfirmed(app)) : .freezeStarted(app, partsAwaited: awaited, own: own)
        case .thaw(let app, let processes, _):
            deferThaw(app, processes)  // after the events it enables are written (DaemonService+Thaw.swift)
        case .terminate(let app, let processes, _):
            if processes.own { freezer.signal(app: app, pid: processes.pid, SIGTERM) }
            if !processes.instances.isEmpty { adoption?.signal(app, SIGTERM) }
        case .kill(let app, let processes, _):
            if processes.own { freezer.kill(app: app, pid: processes.pid) }
            if !processes.instances.isEmpty { adoption?.kill(app) }
        case .reply(let reply, let id):
            answer(reply, to: id)
        case .record:
            break
        case .release(let app):
            removeSnapshots(app)
            freezer.released(app: app)
        case .stopFinished(let unexited):
            releaseWakeLock()
            let completion = stopCompletion
            stopCompletion = nil
            completion?(unexited)
        case .holdLost(let app, _, let id, let d):
            // SPEC §12: `bgtaskctl hold` reports it.
            holdCalls.removeValue(forKey: id)?.fail(
                ManagerError.holdLost(appId: app.rawValue, reason: d.reason.rawValue, message: journalMessage(d)))
        case .memoryPressure(let response):
            memoryPressure?.log(response)
        case .taskStarted:
            break  // the core's refresh machine took it
        case .inhibitIdle(let live):
            inhibitIdle(live)
        case .verifyFrozen(let app, let processes):
            verifyFrozen(app, processes)
        case .observeLocks(let app, let processes):
            return observeLocks(app, processes).map(fact)
        case .inspectFreeze(let app, let processes):
            return fact(inspectFreeze(app, processes))
        case .progressReported(let task):
            monitorProgress(task)  // SPEC §16 (Calls/ContinuedTaskCalls.swift)
            return nil
        }
        return nil
    }

    /// A fact for the lifecycle machine, caused by performing an action (no call's).
    func fact(_ input: Input) -> CoreInput { .lifecycle(input, request: nil, from: nil) }

    /// Sends the core's reply to the request it names (none: a fact's, or an input fed without a request).
    func answer(_ reply: Reply, to id: RequestID?) {
        guard let id else { return }
        if !checks.isEmpty, checks.contains(id) {
            verdicts[id] = reply
            return
        }
        guard let request = openRequests.removeValue(forKey: id) else { return }
        if case .holdID = reply {
            // Open until the core says the hold is lost (`.holdLost` names this request).
            holdCalls[id] = request
        }
        send(reply, to: request)
    }

    /// The launcher's answer to a `.launch`. The core may have moved on meanwhile (terminated or
    /// unregistered the app): it decides to kill a process it no longer expects (issue 13).
    func remoteLaunchFinished(_ app: AppID, _ result: Result<Int32, Launcher.LaunchError>) {
        switch result {
        case .success(let pid):
            appByPid[pid] = app
            feed(.appLaunched(app, pid: pid))
        case .failure(let error):
            feed(.launchFailed(app, message: error.description))
        }
    }
}
