import BGTaskConfig
import BGTaskCore
import BGTaskProtocol
import BGTaskVarlink

// Replies: the core's `Reply` and the daemon's views (apps, assertions, decisions, settings, stats)
// encoded from the typed structs of BGTaskProtocol's contract.
extension VarlinkRequest {
    func reply(_ message: some WireMessage, continues: Bool = false) { reply(VarlinkReply(message, continues: continues)) }
    func fail(_ error: AppError) { fail(error.varlinkError) }
    func fail(_ error: ManagerError) { fail(error.varlinkError) }
}

extension DaemonService {
    /// Answers `request` with the core's reply.
    func send(_ reply: Reply, to request: VarlinkRequest) {
        let call = request.call
        switch reply {
        case .ok:
            request.reply()
        case .checkedIn(let state):
            // The CheckIn call stays open: it is the app's event stream.
            streams[ConnectionID(request.connection.id)] = request
            let app = WireAppID.optional(call.parameters).flatMap(AppID.init)
            if let app { checkedIn(app, peer: request.peer) }
            request.reply(checkInReply(app: app, state: state, event: nil), continues: true)
        case .taskID(let id):
            request.reply(AppWire.BeginBackgroundTaskReply(taskId: id))
        case .holdID(let id):
            // The Hold call stays open until the hold ends (`.holdLost`, or its connection closing).
            request.reply(ManagerWire.HoldReply(holdId: Int64(id.rawValue)), continues: true)
        case .activityID(let id):
            request.reply(AppWire.BeginActivityReply(activityId: id))
        case .failure(let error):
            request.fail(wireError(error, for: call, state: "unknown"))
        case .invalidState(let state):
            request.fail(wireError(.invalidState, for: call, state: state.rawValue))
        }
    }

    /// The core's error as the interface of `call` names it, with the parameters the call gave and the app's
    /// `state` the core's refusal carried (``Reply/invalidState(_:)``).
    func wireError(_ error: CoreError, for call: VarlinkCall, state: String) -> VarlinkError {
        let appId = WireAppID.optional(call.parameters) ?? ""
        let mode = (try? call.decode(AppWire.BeginActivity.self))?.mode.rawValue ?? ""
        return Self.wireError(error, manager: ManagerMethod(call) != nil, appId: appId, mode: mode, state: state)
    }

    /// The core's error by its wire name: `io.bgtaskd.Manager.*` for a Manager call, else `io.bgtaskd.App.*`.
    static func wireError(_ error: CoreError, manager: Bool, appId: String, mode: String, state: String) -> VarlinkError {
        if manager {
            switch error {
            case .noSuchApp: return ManagerError.noSuchApp(appId: appId).varlinkError
            case .notCheckedIn: return ManagerError.notCheckedIn(appId: appId).varlinkError
            case .alreadyCheckedIn: return ManagerError.alreadyCheckedIn(appId: appId).varlinkError
            case .modeNotDeclared, .modeNotContinuous: return ManagerError.modeNotDeclared(mode: mode).varlinkError
            case .invalidState: return ManagerError.invalidState(state: state).varlinkError
            case .permissionDenied: return ManagerError.permissionDenied.varlinkError
            }
        }
        switch error {
        case .noSuchApp: return AppError.noSuchApp(appId: appId).varlinkError
        case .notCheckedIn: return AppError.notCheckedIn(appId: appId).varlinkError
        case .alreadyCheckedIn: return AppError.alreadyCheckedIn(appId: appId).varlinkError
        case .modeNotDeclared: return AppError.modeNotDeclared(mode: mode).varlinkError
        case .modeNotContinuous: return AppError.modeNotContinuous(mode: mode).varlinkError
        case .invalidState: return AppError.invalidState(state: state).varlinkError
        case .permissionDenied: return AppError.permissionDenied.varlinkError
        }
    }

    /// A reply of the CheckIn stream: the first (with the app's refresh status), or one event.
    func checkInReply(app: AppID?, state: AppState, event: Event?) -> AppWire.CheckInReply {
        AppWire.CheckInReply(
            state: state, refreshStatus: app.map { refreshStatusValue($0) }, event: event.map(wireEvent))
    }

    func wireEvent(_ event: Event) -> AppWire.Event {
        var e = AppWire.Event(
            id: event.id, kind: event.kind, state: event.state, needsAck: event.needsAck,
            taskId: event.taskID, taskName: event.taskName, identifier: event.identifier,
            name: event.name, payload: event.payload.flatMap { try? JSON.parse($0.json) }, launchReason: event.launchReason,
            deadlineUSec: event.deadline?.microseconds)
        if let scene = event.scene {
            e.sceneId = scene.id.rawValue
            e.title = scene.title
            e.output = scene.output
        }
        return e
    }

    // MARK: - Views

    func wireDecision(_ r: DecisionRecord) -> ManagerWire.Decision {
        ManagerWire.Decision(
            realtimeUSec: r.realtimeUSec, appId: r.app?.rawValue, decision: r.kind, reason: r.reason, message: r.message,
            scene: r.scene?.rawValue)
    }

    func wireAssertion(_ a: AssertionSnapshot) -> ManagerWire.Assertion {
        ManagerWire.Assertion(
            taskId: a.taskID, appId: a.app.rawValue, name: a.name, remainingUSec: a.remaining?.microseconds,
            expiring: a.expiring, managerHold: a.managerHold)
    }

    func appInfo(_ s: AppSnapshot) -> ManagerWire.AppInfo { appInfo(s, lifecycle: core.lifecycle, refresh: core.refresh) }

    /// `ListApps`' reply. Each app's `AppInfo` is made from its snapshot and written at once, in as many
    /// parts as there are CPUs (at least `minimumPerPart` apps each), each on a thread of its own, then the
    /// parts are sent one after the other: with 10,000 apps the reply is 4.5 MB, and making and writing it
    /// was the largest step of the first answer after start-up. The parts only read the service: this
    /// runs on the daemon's queue, which waits until every part is done. The core's machines are read
    /// once, not copied for each app (a read of `core.lifecycle` or `core.refresh` copies the machine).
    /// `parts`: how many at most (tests; default: the online CPUs).
    func listAppsReply(now t: Instant, minimumPerPart: Int = 1000, parts most: Int? = nil) -> EncodedMessage {
        let lifecycle = core.lifecycle
        let refresh = core.refresh
        let apps = lifecycle.appsInOrder()
        // The energy accounts are made (energy.json read) on first use: here, not by two parts at once.
        _ = energy
        let cpus = most ?? onlineCPUs()
        let count = max(1, min(cpus, apps.count / max(1, minimumPerPart)))
        let size = (apps.count + count - 1) / count
        let ranges = (0..<count).map { k in min(apps.count, k * size)..<min(apps.count, (k + 1) * size) }
        let texts = parallelMap(ranges, minimumPerThread: 1) { [self] range -> [UInt8] in
            var out: [UInt8] = []
            out.reserveCapacity(range.count * 480 + 16)
            for i in range {
                if i > range.lowerBound { out.append(UInt8(ascii: ",")) }
                appInfo(apps.snapshot(i, now: t), lifecycle: lifecycle, refresh: refresh).write(into: &out)
            }
            return out
        }
        var parts: [[UInt8]] = [Array(#"{"apps":["#.utf8)]
        for text in texts where !text.isEmpty {
            if parts.count > 1 { parts.append([UInt8(ascii: ",")]) }
            parts.append(text)
        }
        parts.append(Array("]}".utf8))
        return EncodedMessage(parts: parts)
    }

    private func appInfo(_ s: AppSnapshot, lifecycle: LifecycleMachine, refresh machine: RefreshMachine) -> ManagerWire.AppInfo {
        // The app's refresh values with one look-up per table (`appView`).
        let refresh = machine.appView(s.id, now: clock.realtime())
        var info = ManagerWire.AppInfo(
            appId: s.id.rawValue, name: config.manifests[s.id]?.name ?? s.id.rawValue, state: s.state, pid: s.pid.map { Int64($0) },
            uid: s.pid == nil ? nil : Int64(expectedUID(s.id)), lifecycleAware: s.lifecycleAware,
            assertions: s.assertions.map(wireAssertion),
            activities: s.activities.map {
                ManagerWire.Activity(activityId: $0.activityID, appId: $0.app.rawValue, mode: $0.mode)
            },
            refreshSetting: refresh.setting,
            refreshStatus: RefreshStatus(rawValue: refresh.status.rawValue) ?? .denied,
            backgroundTimeRemainingUSec: s.backgroundTimeRemaining?.microseconds,
            pendingTaskRequests: Int64(refresh.pendingCount),
            lastDecision: (lastNonCause[s.id] ?? history[s.id]?.last(app: s.id)).map(wireDecision), refreshStatusReason: refresh.denial,
            lastForegroundUSec: s.lastForeground?.microseconds, energy: wireEnergy(s.id),
            bucket: refresh.bucket.rawValue)
        info.scenes = wireScenes(s.id, in: lifecycle)
        return info
    }

    /// SPEC §5 as a value: restricted, denied or available.
    func refreshStatusValue(_ app: AppID) -> RefreshStatus { RefreshStatus(rawValue: refreshStatus(app)) ?? .denied }

    func settings() -> ManagerWire.Settings {
        let d = config.daemon
        // The Background App Refresh values in force are the refresh machine's (set at run time, saved).
        let policy = refreshPolicyInForce
        return ManagerWire.Settings(
            backgroundAppRefresh: policy.mode, lowPowerMode: policy.lowPowerMode, onExternalPower: policy.onExternalPower,
            network: policy.network, freezerBackend: freezer.name, socket: config.socketPath,
            didEnterBackgroundTimeoutUSec: d.didEnterBackgroundTimeoutUSec, backgroundTimeBudgetUSec: d.backgroundTimeBudgetUSec,
            expirationWarningUSec: d.expirationWarningUSec, maxBackgroundTasksPerApp: Int64(d.maxBackgroundTasksPerApp),
            launchTimeoutUSec: d.launchTimeoutUSec, killTimeoutUSec: d.killTimeoutUSec, freezerBackendReason: freezerReason,
            dryRun: dryRun)
    }

    func stats() -> ManagerWire.DaemonStats {
        ManagerWire.DaemonStats(
            uptimeUSec: Monotonic.nowUSec() - startedUSec, apps: Int64(machine.appIDs.count),
            connections: Int64(server?.connectionCount ?? 0), calls: Int64(server?.callCount ?? 0),
            decisions: Int64(decisionCount), liveAssertions: Int64(machine.liveAssertionCount),
            journalEntries: Int64(journal.sent), journalDropped: Int64(journal.dropped), freezerBackend: freezer.name,
            freezerBackendReason: freezerReason, dryRun: dryRun,
            journalCoalesced: Int64(journalBudget.coalesced), journalSummaries: Int64(journalBudget.summaries),
            journalWaits: Int64(journal.waits),
            connectionsRefused: Int64(server?.refusedConnections ?? 0), connectionsTimedOut: Int64(server?.timedOutConnections ?? 0),
            connectionsOversized: Int64(server?.oversizedConnections ?? 0), connectionsPaused: Int64(core.pauses),
            systemSleep: sleepStatus.mode, systemSleepReason: sleepStatus.reason, idleInhibited: sleepStatus.idleInhibited,
            sleepsSeen: Int64(sleepStatus.sleepsSeen))
    }
}
