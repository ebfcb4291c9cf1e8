/// Every timing and limit of SPEC §3 (`[Lifecycle]` and `[Refresh]` keys), with the SPEC's defaults.
/// Negative spans are treated as zero.
public struct LifecycleConfig: Hashable, Sendable, Codable {
    /// `DidEnterBackgroundTimeoutSec=5s`: time to acknowledge `did-enter-background` (the grace window).
    public var didEnterBackgroundTimeout: TimeSpan
    /// `BackgroundTimeBudgetSec=30s`: background execution time per app, from entering the background.
    public var backgroundTimeBudget: TimeSpan
    /// `ExpirationWarningSec=5s`: how long before a budget ends `background-task-will-expire` is sent.
    public var expirationWarning: TimeSpan
    /// `MaxBackgroundTasksPerApp=64`: live assertions per app.
    public var maxBackgroundTasksPerApp: Int
    /// `LaunchTimeoutSec=20s`: time for a launched lifecycle-aware app to call `CheckIn`.
    public var launchTimeout: TimeSpan
    /// `WillTerminateTimeoutSec=5s`: time between `will-terminate` and SIGTERM.
    public var willTerminateTimeout: TimeSpan
    /// `KillTimeoutSec=5s`: time between SIGTERM and SIGKILL.
    public var killTimeout: TimeSpan
    /// `RefreshTaskBudgetSec=30s`: a refresh task's (and a remote-notification wake's) time.
    public var refreshTaskBudget: TimeSpan
    /// `ProcessingTaskBudgetSec=5min`: a processing task's time.
    public var processingTaskBudget: TimeSpan
    /// Names kept per app in the queue of notifications for a suspended app (SPEC §7: 64).
    public var maxQueuedNotificationsPerApp: Int
    /// `ControlGroup=`: members (besides root) may use the control methods of `io.bgtaskd.Manager`.
    public var controlGroup: UInt32?
    /// `BusCallBudgetSec=5s`: how long a suspended app runs for a method call addressed to it on the
    /// session bus (`WakeForBusCall`; SPEC §14) before it is suspended again.
    public var busCallBudget: TimeSpan
    /// `FreezerBackend=none`: a dry run. Terminations are decided and recorded but not started: the app keeps
    /// its process and its state, and the daemon's stop leaves its apps running.
    public var dryRun: Bool
    /// `LockRecheckSec=1s` (SPEC §14): how often a deferred suspension is tried again, and how often the
    /// locks of a frozen app that holds any are looked at.
    public var lockRecheck: TimeSpan
    /// `LockDeferralSec=10s`: an app still holding a contended lock this long after it was seen is terminated.
    public var lockDeferral: TimeSpan
    /// `FreezeTimeoutSec=2s`: a freeze not confirmed within this is abandoned (the app thawed).
    public var freezeTimeout: TimeSpan
    /// `FreezeRetrySec=30s`: when an abandoned (or failed) freeze is tried again.
    public var freezeRetry: TimeSpan
    /// `SnapshotTimeoutSec=1s` (SPEC §15): how long the `scene-snapshot` events of an app about to be frozen
    /// are waited for.
    public var snapshotTimeout: TimeSpan
    /// `ContinuedTaskStallSec=30s` (SPEC §16): a continued task that reports no progress this long expires.
    public var continuedTaskStall: TimeSpan = .seconds(30)

    /// The SPEC's defaults, overridable one by one.
    public init(
        didEnterBackgroundTimeout: TimeSpan = .seconds(5),
        backgroundTimeBudget: TimeSpan = .seconds(30),
        expirationWarning: TimeSpan = .seconds(5),
        maxBackgroundTasksPerApp: Int = 64,
        launchTimeout: TimeSpan = .seconds(20),
        willTerminateTimeout: TimeSpan = .seconds(5),
        killTimeout: TimeSpan = .seconds(5),
        refreshTaskBudget: TimeSpan = .seconds(30),
        processingTaskBudget: TimeSpan = .minutes(5),
        maxQueuedNotificationsPerApp: Int = 64,
        controlGroup: UInt32? = nil,
        busCallBudget: TimeSpan = .seconds(5),
        dryRun: Bool = false,
        lockRecheck: TimeSpan = .seconds(1),
        lockDeferral: TimeSpan = .seconds(10),
        freezeTimeout: TimeSpan = .seconds(2),
        freezeRetry: TimeSpan = .seconds(30),
        snapshotTimeout: TimeSpan = .seconds(1)
    ) {
        self.didEnterBackgroundTimeout = didEnterBackgroundTimeout
        self.backgroundTimeBudget = backgroundTimeBudget
        self.expirationWarning = expirationWarning
        self.maxBackgroundTasksPerApp = maxBackgroundTasksPerApp
        self.launchTimeout = launchTimeout
        self.willTerminateTimeout = willTerminateTimeout
        self.killTimeout = killTimeout
        self.refreshTaskBudget = refreshTaskBudget
        self.processingTaskBudget = processingTaskBudget
        self.maxQueuedNotificationsPerApp = maxQueuedNotificationsPerApp
        self.controlGroup = controlGroup
        self.busCallBudget = busCallBudget
        self.dryRun = dryRun
        self.lockRecheck = lockRecheck
        self.lockDeferral = lockDeferral
        self.freezeTimeout = freezeTimeout
        self.freezeRetry = freezeRetry
        self.snapshotTimeout = snapshotTimeout
    }

    /// The SPEC's defaults.
    public static let `default` = LifecycleConfig()
}

/// What the core needs from an app manifest (`apps.d/<id>.app`).
public struct AppManifest: Hashable, Sendable, Codable {
    /// `ID=`.
    public var id: AppID
    /// `LifecycleAware=` (default yes). `false`: no events, no launch timeout, frozen after the grace window.
    public var lifecycleAware: Bool
    /// `BackgroundModes=`.
    public var backgroundModes: Set<BackgroundMode>
    /// Never frozen (`[Apps] Exempt=`, `X-Bgtaskd-Exempt=true`): the shell, the on-screen keyboard.
    public var exempt: Bool
    /// The uid of `User=` (resolved by the shell; the daemon's own when unset): besides root, only this uid
    /// may call `io.bgtaskd.App` for the app. `nil`: root only. A reload re-registers it (issue 13).
    public var uid: UInt32?

    /// A manifest; lifecycle-aware with no background modes unless told otherwise.
    public init(
        id: AppID, lifecycleAware: Bool = true, backgroundModes: Set<BackgroundMode> = [], exempt: Bool = false,
        uid: UInt32? = nil
    ) {
        self.id = id
        self.lifecycleAware = lifecycleAware
        self.backgroundModes = backgroundModes
        self.exempt = exempt
        self.uid = uid
    }
}

/// A notification payload: JSON text the core carries without reading (`payload: ?object` on the wire).
public struct Payload: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The JSON text of the object.
    public var json: String
    /// Wraps JSON text; the core never parses it.
    public init(json: String) { self.json = json }
    /// The JSON text.
    public var description: String { json }
}

/// One event for an app's event stream (`type Event` of `io.bgtaskd.App.CheckIn`).
public struct Event: Hashable, Sendable, Codable {
    /// The event's number, the argument of `Acknowledge` when ``needsAck``.
    public var id: EventID
    /// What happened.
    public var kind: LifecycleEventKind
    /// The app's state once the event is delivered.
    public var state: AppState
    /// Whether the app must call `Acknowledge(id)` (only `did-enter-background` and a remote-notification wake).
    public var needsAck: Bool
    /// The assertion a `background-task-will-expire` is about.
    public var taskID: TaskID?
    /// That assertion's name.
    public var taskName: String?
    /// The scheduled task's identifier (`perform-task`, its `background-task-will-expire`).
    public var identifier: String?
    /// The notification's name.
    public var name: String?
    /// The notification's payload.
    public var payload: Payload?
    /// Why the app was launched (`did-finish-launching`).
    public var launchReason: LaunchReason?
    /// When the corresponding time runs out (monotonic; `deadlineUSec`): the acknowledgement, the budget,
    /// the task, or SIGTERM for `will-terminate`.
    public var deadline: Instant?
    /// SPEC §15: the scene a scene event is about (`sceneId`, `title`, `output`).
    public var scene: SceneRef? = nil

    /// An event; the optional fields default to `nil`.
    public init(
        id: EventID, kind: LifecycleEventKind, state: AppState, needsAck: Bool = false,
        taskID: TaskID? = nil, taskName: String? = nil, identifier: String? = nil, name: String? = nil,
        payload: Payload? = nil, launchReason: LaunchReason? = nil, deadline: Instant? = nil
    ) {
        self.id = id
        self.kind = kind
        self.state = state
        self.needsAck = needsAck
        self.taskID = taskID
        self.taskName = taskName
        self.identifier = identifier
        self.name = name
        self.payload = payload
        self.launchReason = launchReason
        self.deadline = deadline
    }
}

/// One decision, one journal entry (SPEC §11). The shell adds the realtime stamp, uid and peer fields.
///
/// Its ``Fields`` are kept in one copy-on-write box (`CopyOnWrite`) and read and written as its own members
/// (`decision.kind`, `decision.scene = …`): a decision rides in the actions and inputs that carry it and is
/// copied with them several times per call, so a copy is one reference count, not ~100 bytes of fields and
/// their five references. Equality, hashing, `Codable` and printing are the fields' own, as a plain struct's
/// were (`DecisionBoxTests`).
@dynamicMemberLookup
public struct Decision: Hashable, Sendable, Codable, CustomReflectable {
    public struct Fields: Hashable, Sendable, Codable {
        /// `BGTASKD_DECISION`.
        public var kind: DecisionKind
        /// `BGTASKD_REASON`.
        public var reason: Reason
        /// `BGTASKD_APP`; `nil` only for decisions about no app in particular.
        public var app: AppID?
        /// `BGTASKD_STATE`: the app's state after the decision.
        public var state: AppState?
        /// `BGTASKD_PREVIOUS_STATE`: the app's state before it, when the decision changed it.
        public var previousState: AppState?
        /// `BGTASKD_TASK_ID`.
        public var taskID: TaskID?
        /// `BGTASKD_TASK_NAME`: an assertion's name or a scheduled task's identifier.
        public var taskName: String?
        /// The activity a grant/end is about.
        public var activityID: ActivityID?
        /// `BGTASKD_REMAINING_USEC`: background time left, where it applies.
        public var remaining: TimeSpan?
        /// `BGTASKD_PID` / `OBJECT_PID`.
        public var pid: Int32?
        /// The journal priority.
        public var severity: Severity
        /// The facts the shell renders `MESSAGE` from (the core holds no English).
        public var detail: DecisionDetail
        /// `BGTASKD_SCENE`: the scene whose change caused the decision (SPEC §15).
        public var scene: SceneID? = nil
    }

    @usableFromInline var storage: CopyOnWrite<Fields>

    /// A field, read in place or changed (the box copied first if another decision shares it).
    @inlinable public subscript<Value>(dynamicMember field: WritableKeyPath<Fields, Value>) -> Value {
        get { storage[field] }
        set { storage.modify { $0[keyPath: field] = newValue } }
    }

    /// A decision; optional fields default to `nil`, severity to `info`.
    public init(
        kind: DecisionKind, reason: Reason, app: AppID?, state: AppState? = nil, previousState: AppState? = nil,
        taskID: TaskID? = nil, taskName: String? = nil, activityID: ActivityID? = nil, remaining: TimeSpan? = nil,
        pid: Int32? = nil, severity: Severity = .info, detail: DecisionDetail
    ) {
        storage = CopyOnWrite(
            Fields(
                kind: kind, reason: reason, app: app, state: state, previousState: previousState, taskID: taskID,
                taskName: taskName, activityID: activityID, remaining: remaining, pid: pid, severity: severity,
                detail: detail))
    }

    /// A decision taken by a shell component, with its sentence (``DecisionDetail/note(_:)``).
    public init(
        kind: DecisionKind, reason: Reason, app: AppID?, state: AppState? = nil, previousState: AppState? = nil,
        taskID: TaskID? = nil, taskName: String? = nil, activityID: ActivityID? = nil, remaining: TimeSpan? = nil,
        pid: Int32? = nil, severity: Severity = .info, message: String
    ) {
        self.init(
            kind: kind, reason: reason, app: app, state: state, previousState: previousState, taskID: taskID,
            taskName: taskName, activityID: activityID, remaining: remaining, pid: pid, severity: severity,
            detail: .note(message))
    }

    public static func == (a: Decision, b: Decision) -> Bool {
        a.storage.shares(with: b.storage) || a.storage.fields == b.storage.fields
    }

    public func hash(into hasher: inout Hasher) { storage.fields.hash(into: &hasher) }

    /// The keys and values of the fields, as the struct's synthesized conformance wrote them.
    public func encode(to encoder: any Encoder) throws { try storage.fields.encode(to: encoder) }

    public init(from decoder: any Decoder) throws { storage = CopyOnWrite(try Fields(from: decoder)) }

    /// The fields, so that a decision prints as the struct did (`Decision(kind: …, reason: …)`).
    public var customMirror: Mirror {
        Mirror(self, children: Mirror(reflecting: storage.fields).children, displayStyle: .struct)
    }
}

/// The answer to the request an input carried. At most one per ``LifecycleMachine/handle(_:now:)`` call.
public enum Reply: Hashable, Sendable, Codable {
    /// Done (also for harmless no-ops such as ending an unknown assertion).
    case ok
    /// `CheckIn` accepted; the first reply of the stream carries this state (before any launch events).
    case checkedIn(state: AppState)
    /// `BeginBackgroundTask`: the new assertion, or ``TaskID/invalid`` when denied (see the `deny` decision).
    case taskID(TaskID)
    /// `io.bgtaskd.Manager.Hold`: the new hold. The call stays open until the hold ends (``Action/holdLost(_:_:to:because:)``
    /// or its connection closing).
    case holdID(TaskID)
    /// `BeginActivity`: the new activity.
    case activityID(ActivityID)
    /// The request failed.
    case failure(CoreError)
    /// The request does not fit the app's state (``CoreError/invalidState``), which this carries as the core saw
    /// it when it refused: the wire's `InvalidState(state)` (issue 13: the shell no longer asks the machine).
    case invalidState(AppState)
}

/// What the core made of a memory-pressure trigger (SPEC §8), for the shell's log line.
public enum MemoryPressureResponse: Hashable, Sendable, Codable {
    /// The first trigger of an episode: `memory-warning` to the background apps.
    case warn
    /// The pressure persists: up to `count` apps are terminated, suspended ones first.
    case reclaim(count: Int)
}

/// The processes a freeze, thaw, terminate or kill acts on, as the core knows them when it decides.
public struct Processes: Hashable, Sendable, Codable {
    /// The app's process: the one the shell spawned or the one that checked in (`nil`: none known; the
    /// app's own cgroup may still hold processes, e.g. after a launch that failed or was called off).
    public var pid: Int32?
    /// The app's cgroups started by others (SPEC §13, adopted); empty: none.
    public var instances: [InstanceID]
    /// Whether the daemon's own freezer acts (on the app's own cgroup and `pid`): the app has no adopted
    /// cgroup, or its `pid` is one the daemon spawned or that checked in from outside them. False: only the
    /// adopted cgroups (`instances`) are acted on.
    public var own: Bool

    /// The processes of an action.
    public init(pid: Int32?, instances: [InstanceID] = [], own: Bool = true) {
        self.pid = pid
        self.instances = instances
        self.own = own
    }
}

/// Names the request an input carries (``LifecycleMachine/handle(_:now:request:)``); its
/// ``Action/reply(_:to:)`` echoes it, so the shell answers the right call without ambient state.
public struct RequestID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ value: UInt64) { self.rawValue = value }
    public var description: String { String(rawValue) }
}
