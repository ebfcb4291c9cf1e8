/// A live background-task assertion, as `ListAssertions` and `GetApp` show it.
public struct AssertionSnapshot: Hashable, Sendable {
    /// Its identifier.
    public var taskID: TaskID
    /// The app it keeps running.
    public var app: AppID
    /// The name given at begin.
    public var name: String?
    /// The connection that began it (it ends when that connection closes).
    public var connection: ConnectionID
    /// When it was begun.
    public var begun: Instant
    /// The app's background time left; `nil` while the app is in the foreground.
    public var remaining: TimeSpan?
    /// Whether `background-task-will-expire` was sent for it.
    public var expiring: Bool
    /// A manager hold (no time budget), not an app's own assertion.
    public var managerHold: Bool = false
}

/// A live background-mode activity.
public struct ActivitySnapshot: Hashable, Sendable {
    /// Its identifier.
    public var activityID: ActivityID
    /// The app it keeps running.
    public var app: AppID
    /// Its mode.
    public var mode: BackgroundMode
    /// The connection that began it.
    public var connection: ConnectionID
    /// When it was begun.
    public var begun: Instant
}

/// A scheduled task the app is performing.
public struct TaskRunSnapshot: Hashable, Sendable {
    /// The task request's identifier.
    public var identifier: String
    /// Refresh or processing.
    public var kind: TaskKind
    /// When `perform-task` was delivered.
    public var started: Instant
    /// When it must be completed.
    public var deadline: Instant
    /// Whether `background-task-will-expire` was sent for it.
    public var expiring: Bool
}

/// One app as the core sees it (the core's part of `AppInfo`).
public struct AppSnapshot: Hashable, Sendable {
    /// The app.
    public var id: AppID
    /// `LifecycleAware=`.
    public var lifecycleAware: Bool
    /// `BackgroundModes=`.
    public var backgroundModes: Set<BackgroundMode>
    /// Its state.
    public var state: AppState
    /// Its main process, when known.
    public var pid: Int32?
    /// Its event stream, when checked in.
    public var connection: ConnectionID?
    /// A launch is under way (spawned or not, not yet checked in).
    public var launching: Bool
    /// Why it is being terminated, while it is.
    public var terminationReason: Reason?
    /// Interrupted (inactive until `EndInterruption`).
    public var interrupted: Bool
    /// `did-enter-background` not yet acknowledged (or the grace window of an unaware app not yet over).
    public var inGraceWindow: Bool
    /// Background time left; `nil` in the foreground and when not running.
    public var backgroundTimeRemaining: TimeSpan?
    /// Live assertions, in begin order.
    public var assertions: [AssertionSnapshot]
    /// Live activities, in begin order.
    public var activities: [ActivitySnapshot]
    /// Scheduled tasks being performed, by identifier.
    public var runningTasks: [TaskRunSnapshot]
    /// Identifiers of scheduled tasks that fell due in the foreground and wait for the background (SPEC §6),
    /// in the order they fell due. Their requests stay pending until they start (``Action/taskStarted(_:identifier:)``).
    public var waitingTasks: [String] = []
    /// The end of a remote-notification wake window, while one is open.
    public var wakeDeadline: Instant?
    /// Notifications queued while suspended, in delivery order.
    public var queuedNotifications: [QueuedNotification]
    /// The kind and reason of the last decision about it (the shell keeps the decisions themselves).
    public var lastDecision: LastDecision?
    /// When it was last in the foreground: `now` while it is, the instant it left otherwise; `nil` if never.
    public var lastForeground: Instant? = nil
    /// The daemon launched it (rather than the app checking in by itself).
    public var launchedByDaemon: Bool = false

    /// Whether it is being terminated.
    public var terminating: Bool { terminationReason != nil }
}

extension LifecycleMachine {
    /// The registered apps, sorted.
    public var appIDs: [AppID] { slots.keys.sorted() }

    /// Apps the daemon started that still have a process (or a launch under way): what a stopping daemon waits for.
    public var appsStartedByDaemon: [AppID] {
        records.filter { $0.launchedByDaemon && ($0.pid != nil || $0.launch != nil) }.map(\.id).sorted()
    }

    /// The number of live assertions (all apps).
    public var liveAssertionCount: Int { assertionTable.count }

    /// One app at `now` (for `GetApp`, `BackgroundTimeRemaining`, `Explain`); `nil` if unknown.
    public func app(_ id: AppID, now: Instant) -> AppSnapshot? {
        guard let i = slots[id] else { return nil }
        return snapshot(records[i], now: now)
    }

    /// What the refresh machine reads of an app (its facts), without a whole ``AppSnapshot``: the same
    /// fields the snapshot would give it.
    func refreshFacts(of id: AppID) -> RefreshAppFacts? {
        guard let i = slots[id] else { return nil }
        return RefreshAppFacts(
            state: reportedState(i), lifecycleAware: records[i].manifest.lifecycleAware,
            terminating: records[i].termination != nil,
            runningTasks: records[i].tasks.isEmpty ? [] : Set(records[i].tasks.keys),
            waitingTasks: records[i].waitingTasks.isEmpty
                ? [] : Set(records[i].waitingTasks.compactMap { if case .task(let identifier, _, _) = $0 { identifier } else { nil } }))
    }

    /// Every app at `now`, sorted by identifier.
    public func apps(now: Instant) -> [AppSnapshot] {
        let apps = appsInOrder()
        return (0..<apps.count).map { apps.snapshot($0, now: now) }
    }

    /// Every app sorted by identifier, each snapshot made when it is asked for (`ListApps`: its reply is
    /// written in parts on several threads, each part's snapshots made and dropped as it goes).
    public func appsInOrder() -> AppsInOrder {
        // The indices sorted, not the records (~10,000 × the record's size copied before the snapshots);
        // not at all when the records are in order already (registered in app-ID order: start-up).
        var order = Array(records.indices)
        if records.indices.dropFirst().contains(where: { !(records[$0 - 1].id < records[$0].id) }) {
            order.sort { records[$0].id < records[$1].id }
        }
        return AppsInOrder(machine: self, order: order)
    }

    /// Every live assertion at `now`, in begin order (for `ListAssertions`).
    public func assertions(now: Instant) -> [AssertionSnapshot] {
        assertionTable.ids.compactMap { assertionSnapshot($0, now: now) }
    }

    /// The app whose acknowledgement `event` waits for; `nil` when none does (issue 11: only that app's
    /// user, or root, may acknowledge it).
    public func appAwaitingAcknowledgement(of event: EventID) -> AppID? { pendingAcks[event] }

    /// `BackgroundTimeRemaining(appId)`: `nil` in the foreground (unlimited) and when not running.
    public func backgroundTimeRemaining(of app: AppID, now: Instant) -> TimeSpan? {
        guard let i = slots[app] else { return nil }
        return remaining(i, at: now)
    }

    func snapshot(_ r: AppRecord, now: Instant) -> AppSnapshot {
        AppSnapshot(
            id: r.id, lifecycleAware: r.manifest.lifecycleAware, backgroundModes: r.manifest.backgroundModes,
            state: r.reportedState, pid: r.pid, connection: r.connection, launching: r.launch != nil,
            terminationReason: r.termination?.reason, interrupted: r.interrupted, inGraceWindow: r.grace != .none,
            backgroundTimeRemaining: remaining(of: r, at: now),
            assertions: r.assertions.compactMap { assertionSnapshot($0, now: now) },
            activities: r.activities.compactMap { id in
                activityTable[id].map {
                    ActivitySnapshot(activityID: id, app: $0.app, mode: $0.mode, connection: $0.connection, begun: $0.begun)
                }
            },
            runningTasks: r.tasks.sorted { $0.key < $1.key }.map {
                TaskRunSnapshot(
                    identifier: $0.key, kind: $0.value.kind, started: $0.value.started, deadline: $0.value.deadline,
                    expiring: $0.value.warned)
            },
            waitingTasks: r.waitingTasks.compactMap { if case .task(let identifier, _, _) = $0 { identifier } else { nil } },
            wakeDeadline: r.wake?.deadline, queuedNotifications: r.notifications.entries, lastDecision: r.lastDecision,
            lastForeground: r.state.isForeground ? now : r.leftForeground, launchedByDaemon: r.launchedByDaemon)
    }

    func assertionSnapshot(_ task: TaskID, now: Instant) -> AssertionSnapshot? {
        guard let a = assertionTable[task], let i = slots[a.app] else { return nil }
        return AssertionSnapshot(
            taskID: task, app: a.app, name: a.name, connection: a.connection, begun: a.begun,
            remaining: a.managerHold ? nil : remaining(i, at: now), expiring: a.warned, managerHold: a.managerHold)
    }
}

/// What an app's snapshot says of its last decision.
public struct LastDecision: Hashable, Sendable, Codable {
    /// `BGTASKD_DECISION`.
    public var kind: DecisionKind
    /// `BGTASKD_REASON`.
    public var reason: Reason

    public init(kind: DecisionKind, reason: Reason) {
        self.kind = kind
        self.reason = reason
    }
}

/// The apps of a machine in identifier order (``LifecycleMachine/appsInOrder()``); a value (the machine's
/// tables shared, not copied), so parts of it may be read on several threads at once.
public struct AppsInOrder: Sendable {
    let machine: LifecycleMachine
    let order: [Int]

    public var count: Int { order.count }

    /// The `i`-th app (in identifier order) at `now`.
    public func snapshot(_ i: Int, now: Instant) -> AppSnapshot { machine.snapshot(machine.records[order[i]], now: now) }
}
