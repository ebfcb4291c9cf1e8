/// Every timing and limit of SPEC §3 (`[Lifecycle]` and `[Refresh]` keys), with the SPEC's defaults.
/// Negative spans are treated as zero.
public struct LifecycleConfig: Hashable, Sendable {
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
        freezeRetry: TimeSpan = .seconds(30)
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
    }

    /// The SPEC's defaults.
    public static let `default` = LifecycleConfig()
}

/// What the core needs from an app manifest (`apps.d/<id>.app`).
public struct AppManifest: Hashable, Sendable {
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
public struct Payload: Hashable, Sendable, CustomStringConvertible {
    /// The JSON text of the object.
    public var json: String
    /// Wraps JSON text; the core never parses it.
    public init(json: String) { self.json = json }
    /// The JSON text.
    public var description: String { json }
}

/// One event for an app's event stream (`type Event` of `io.bgtaskd.App.CheckIn`).
public struct Event: Hashable, Sendable {
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
public struct Decision: Hashable, Sendable {
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

    /// A decision; optional fields default to `nil`, severity to `info`.
    public init(
        kind: DecisionKind, reason: Reason, app: AppID?, state: AppState? = nil, previousState: AppState? = nil,
        taskID: TaskID? = nil, taskName: String? = nil, activityID: ActivityID? = nil, remaining: TimeSpan? = nil,
        pid: Int32? = nil, severity: Severity = .info, detail: DecisionDetail
    ) {
        self.kind = kind
        self.reason = reason
        self.app = app
        self.state = state
        self.previousState = previousState
        self.taskID = taskID
        self.taskName = taskName
        self.activityID = activityID
        self.remaining = remaining
        self.pid = pid
        self.severity = severity
        self.detail = detail
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
}

/// The answer to the request an input carried. At most one per ``LifecycleMachine/handle(_:now:)`` call.
public enum Reply: Hashable, Sendable {
    /// Done (also for harmless no-ops such as ending an unknown assertion).
    case ok
    /// `CheckIn` accepted; the first reply of the stream carries this state (before any launch events).
    case checkedIn(state: AppState)
    /// `BeginBackgroundTask`: the new assertion, or ``TaskID/invalid`` when denied (see the `deny` decision).
    case taskID(TaskID)
    /// `BeginActivity`: the new activity.
    case activityID(ActivityID)
    /// The request failed.
    case failure(CoreError)
    /// The request does not fit the app's state (``CoreError/invalidState``), which this carries as the core saw
    /// it when it refused: the wire's `InvalidState(state)` (issue 13: the shell no longer asks the machine).
    case invalidState(AppState)
}

/// What the core made of a memory-pressure trigger (SPEC §8), for the shell's log line.
public enum MemoryPressureResponse: Hashable, Sendable {
    /// The first trigger of an episode: `memory-warning` to the background apps.
    case warn
    /// The pressure persists: up to `count` apps are terminated, suspended ones first.
    case reclaim(count: Int)
}

/// The processes a freeze, thaw, terminate or kill acts on, as the core knows them when it decides.
public struct Processes: Hashable, Sendable {
    /// The app's process: the one the shell spawned or the one that checked in (`nil`: none known; the
    /// app's own cgroup may still hold processes, e.g. after a launch that failed or was called off).
    public var pid: Int32?
    /// The app's cgroups started by others (SPEC §13, adopted); empty: none.
    public var instances: [InstanceID]

    /// The processes of an action.
    public init(pid: Int32?, instances: [InstanceID] = []) {
        self.pid = pid
        self.instances = instances
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

/// Imperatives for the shell, in the order it must perform them (events are never reordered).
///
/// State has already changed when the actions are returned (as in async-http-client's state machines):
/// the shell only performs them. Each carries what the shell needs to perform it.
public enum Action: Hashable, Sendable {
    /// Send `event` on `connection`, the app's event stream (a `CheckIn` reply with `continues`).
    case deliver(AppID, ConnectionID, Event)
    /// Start the app's process (in its cgroup), then feed `appLaunched` or `launchFailed`.
    case launch(AppID, LaunchReason, Decision)
    /// Freeze the app's processes (cgroup.freeze 1, or SIGSTOP). The `suspend` decision it carries is not
    /// journaled with it: the core records it (``record(_:)``) when the shell reports the freeze done
    /// (``Input/freezeConfirmed(_:)``), and until then reports the app `background` (SPEC §9: suspended
    /// only once its processes are stopped). So ``decision`` is `nil` for it.
    case freeze(AppID, Processes, Decision)
    /// Thaw them (cgroup.freeze 0, or SIGCONT). Always before any event it enables.
    case thaw(AppID, Processes, Decision)
    /// Send SIGTERM to them.
    case terminate(AppID, Processes, Decision)
    /// Kill them at once: cgroup.kill, or SIGKILL (also when frozen).
    case kill(AppID, Processes, Decision)
    /// Answer the request `to` names (the one the input carried; `nil` when it carried none).
    case reply(Reply, to: RequestID?)
    /// Write a decision to the journal (and the `Monitor` stream) without any other effect.
    case record(Decision)
    /// The app has no process the core knows of any more: end what its own cgroup still holds (frozen or
    /// not) and drop the cgroup.
    case release(AppID)
    /// The daemon's stop (``Input/stopRequested``) is over: every app it started has exited (`unexited`
    /// empty), or `WillTerminateTimeoutSec` + 2 × `KillTimeoutSec` + 1 s passed and these had not.
    case stopFinished(unexited: [AppID])
    /// SPEC §12: a manager hold does not outlive its app. The app's termination was decided (`because`: that
    /// terminate decision, already carried by the action before this one), so the `Hold` call `to` names (the
    /// request ``Input/holdRequested(_:connection:name:)`` came with) ends with `HoldLost`. Once per hold.
    case holdLost(AppID, TaskID, to: RequestID, because: Decision)
    /// A ``Input/memoryPressureTriggered(window:)`` was taken as `response`; the actions that carry it out follow.
    case memoryPressure(MemoryPressureResponse)
    /// The scheduled task `identifier` started (`perform-task` delivered; its `run-task` decision is in the
    /// action before). Tell the refresh machine (``RefreshInput/taskStarted(_:identifier:)``): a request that
    /// waited for the background leaves the pending list only now (SPEC §6).
    case taskStarted(AppID, identifier: String)
    /// SPEC §14: whether live background work (assertions, manager holds, running scheduled tasks, activities)
    /// should keep the system from idling into sleep changed: hold logind's `idle` inhibitor (and the kernel
    /// wake lock) with this description, or release it (`nil`). Emitted when the set of apps with live work
    /// changes, after the actions that changed it.
    case inhibitIdle(IdleInhibition?)
    /// SPEC §14: the system resumed from sleep; the app is held frozen: make sure it still is (freeze it
    /// again if something thawed it meanwhile, as systemd does to `user.slice` around a suspend).
    case verifyFrozen(AppID, Processes)
    /// SPEC §14: read `/proc/locks` for the app's processes and feed ``Input/locksObserved(_:_:)`` (at once:
    /// the core waits for the answer before it freezes the app or decides on its locks).
    case observeLocks(AppID, Processes)
    /// SPEC §14: the app's freeze was not confirmed within `FreezeTimeoutSec`: find its processes that did not
    /// stop and feed ``Input/freezeStalled(_:_:)`` (an empty list: the freeze is done after all).
    case inspectFreeze(AppID, Processes)

    /// The decision this action carries, if any: every action that changes an app carries one.
    public var decision: Decision? {
        switch self {
        case .launch(_, _, let d), .thaw(_, _, let d), .terminate(_, _, let d), .kill(_, _, let d), .record(let d):
            return d
        case .freeze, .deliver, .reply, .release, .stopFinished, .holdLost, .memoryPressure, .taskStarted, .inhibitIdle,
            .verifyFrozen, .observeLocks, .inspectFreeze:
            return nil
        }
    }
}

/// Past-tense facts the shell feeds to ``LifecycleMachine/handle(_:now:)``.
///
/// Requests (`…Requested`, `appCheckedIn`, `eventAcknowledged`, `taskCompleted`, …) produce exactly one
/// ``Action/reply(_:)``; facts about processes and connections produce none.
public enum Input: Hashable, Sendable {
    /// A manifest was loaded (or reloaded: the app's state is kept). Replies `.ok`.
    case appRegistered(AppManifest)
    /// A manifest disappeared on reload. A running app is terminated (`manifest-removed`) and forgotten at exit.
    case appUnregistered(AppID)
    /// The configuration was (re)loaded; new deadlines use it, armed ones keep their instants.
    case configurationChanged(LifecycleConfig)
    /// `Launch(appId, background?)`. A foreground launch of an app already running foregrounds it.
    case launchRequested(AppID, background: Bool, exclusive: Bool)
    /// The shell started the process of a ``Action/launch(_:_:_:)``. A process the core no longer expects
    /// (the launch was called off meanwhile, the app is unknown) is killed.
    case appLaunched(AppID, pid: Int32)
    /// The shell could not start the process (`message`: the launcher's text). The app's own cgroup is
    /// killed (a launcher that answered too late may have started something there).
    case launchFailed(AppID, message: String)
    /// `CheckIn(appId)` on `connection`, which becomes the app's event stream.
    case appCheckedIn(AppID, connection: ConnectionID, pid: Int32?)
    /// `Acknowledge(eventId)` from `caller`. Unknown or stale identifiers are ignored; an event of an app
    /// acknowledged by a uid that is neither the app's nor root is refused (`permissionDenied`, journaled).
    case eventAcknowledged(EventID, caller: Caller = .trusted)
    /// A call of `io.bgtaskd.App` named `method` for `app` arrived from `caller`: replies `.ok` when the
    /// caller is root or the app's user (``AppManifest/uid``), else denies (`permission-denied`, journaled)
    /// with `.failure(.permissionDenied)`. The shell feeds it before the call's own input.
    case appCallReceived(AppID, method: String, caller: Caller)
    /// A control call of `io.bgtaskd.Manager` arrived from `caller`, a member of `groups` (its
    /// supplementary groups): `.ok` for root or a member of ``LifecycleConfig/controlGroup``, else
    /// `.failure(.permissionDenied)` (not journaled: a read-only caller probing is no decision about an app).
    case controlCallReceived(caller: Caller, groups: [UInt32])
    /// `Foreground(appId, exclusive?)`: launches, thaws or activates the app.
    case foregroundRequested(AppID, exclusive: Bool)
    /// `Background(appId)`.
    case backgroundRequested(AppID)
    /// `Interrupt(appId)`.
    case interruptionBegan(AppID)
    /// `EndInterruption(appId)`.
    case interruptionEnded(AppID)
    /// `Terminate(appId)`.
    case terminateRequested(AppID)
    /// `BeginBackgroundTask(appId, name?)` on `connection`, which owns the assertion.
    case assertionRequested(AppID, connection: ConnectionID, name: String?)
    /// `EndBackgroundTask(appId, taskId)`.
    case assertionEndRequested(AppID, TaskID)
    /// `io.bgtaskd.Manager.Hold(appId, name?)` on `connection`: a manager hold (SPEC §12), an assertion with no
    /// time budget that lives as long as `connection`. Replies ``Reply/taskID(_:)`` or a failure.
    case holdRequested(AppID, connection: ConnectionID, name: String?)
    /// The daemon is stopping (SIGTERM): every app it started is terminated (will-terminate, SIGTERM, SIGKILL;
    /// a suspended one is killed). No reply; ``Action/stopFinished(unexited:)`` says when it is over.
    case stopRequested
    /// `BeginActivity(appId, mode)` on `connection`, which owns the activity.
    case activityRequested(AppID, connection: ConnectionID, mode: BackgroundMode)
    /// `EndActivity(appId, activityId)`.
    case activityEndRequested(AppID, ActivityID)
    /// A client connection closed: its assertions and activities end; if it was the event stream of an app
    /// started by hand, the app is gone, and a process of it that the daemon spawned is killed.
    case connectionClosed(ConnectionID)
    /// The app's process exited. A `pid` that is not the app's current one is ignored (a stale report).
    case processExited(AppID, pid: Int32?)
    /// The shell saw the ``Action/freeze(_:_:_:)`` of the app done: `cgroup.events` says `frozen 1`, every
    /// process it sent SIGSTOP is stopped or gone, or there was nothing to stop. The freeze's `suspend`
    /// decision is recorded now, and the app is reported `suspended` from now on. A confirmation of a
    /// freeze that was called off (the app thawed, killed or gone meanwhile) is ignored.
    case freezeConfirmed(AppID)
    /// Run a scheduled task now (the policy already said yes): launch or resume into the background, `perform-task`.
    case taskRunRequested(AppID, identifier: String, kind: TaskKind, reason: Reason)
    /// `CompleteTask(appId, identifier, success)`.
    case taskCompleted(AppID, identifier: String, success: Bool)
    /// `WakeForRemoteNotification(appId, payload?)` (the policy already said yes).
    case remoteNotificationReceived(AppID, payload: Payload?)
    /// `PostNotification(name, appId?, payload?)`: to one app, or every app when `app` is `nil`.
    case notificationPosted(name: String, app: AppID?, payload: Payload?)
    /// Memory pressure: send `memory-warning` to the app, or to every background app when `nil`.
    case memoryWarningRequested(AppID?)
    /// The PSI trigger fired (a fact, at the `now` it is fed with; `window`: the trigger's window as the kernel
    /// took it). The core decides (SPEC §8): the first trigger of an episode sends `memory-warning` as
    /// ``memoryWarningRequested(_:)`` with `nil`; a trigger within 3 windows of the previous one means the
    /// pressure persists and terminates one app as ``memoryReclaimRequested(count:)``. Emits
    /// ``Action/memoryPressure(_:)`` first. No reply.
    case memoryPressureTriggered(window: TimeSpan)
    /// Memory pressure persists: terminate up to `count` apps, suspended ones first, least recently used
    /// first, then background ones; never a foreground app.
    case memoryReclaimRequested(count: Int)
    /// The timer armed for ``LifecycleMachine/nextDeadline`` fired (early or late: both harmless).
    case deadlineReached
    /// A cgroup started by someone else holds processes of the app (SPEC §13, adoption); `pid` is one of them.
    case instanceAppeared(AppID, InstanceID, pid: Int32?)
    /// That cgroup emptied or went away.
    case instanceVanished(AppID, InstanceID)
    /// An adopted cgroup of the app is no longer watched (`[Apps] Adopt=`/`AdoptFrom=` changed on reload):
    /// its processes keep running, thawed, unmanaged. The app's last one releases the app (`adoption-changed`).
    case instanceReleased(AppID, InstanceID)
    /// `SetFocus(appId?, reason)`: the compositor's front app (nil: none, the home screen or a locked
    /// screen). Replies `.ok`, or `noSuchApp` / `invalidState`.
    case focusChanged(AppID?, reason: Reason)
    /// The request of a task that waits for the app's background (SPEC §6) was cancelled
    /// (`CancelTaskRequest`, `CancelAllTaskRequests`): the task no longer starts. A fact: no reply.
    case waitingTaskCancelled(AppID, identifier: String)
    /// `WakeForBusCall(appId, sender, member)` (bgtaskd-focus saw a method call `member` from `sender`
    /// addressed to the app on the session bus; SPEC §14): a suspended app is resumed into the background
    /// (`resume`, `bus-call`) for `BusCallBudgetSec`, then suspended again; an app in the background is kept
    /// running that long. Replies `.ok`, or `noSuchApp` / `invalidState` (not running, terminating).
    case busCallReceived(AppID, sender: String, member: String)
    /// logind's `PrepareForSleep(true)`: the system is about to sleep. One `policy` decision (`system-sleep`),
    /// no reply.
    case systemSleepPreparing
    /// logind's `PrepareForSleep(false)`: the system resumed. Every app held frozen gets a
    /// ``Action/verifyFrozen(_:_:)``. No reply.
    case systemResumed
    /// SPEC §14: what `/proc/locks` says about the app's processes, the answer to ``Action/observeLocks(_:_:)``.
    /// Before a freeze: a lock others wait for defers it (`holds-contended-lock`); while frozen: such a lock
    /// resumes the app (`lock-contended`). A fact: no reply.
    case locksObserved(AppID, LockObservation)
    /// SPEC §14: the answer to ``Action/inspectFreeze(_:_:)``: the app's processes that did not stop. Non-empty:
    /// the freeze is abandoned (`freeze-timeout`); empty: it is done (as ``freezeConfirmed(_:)``).
    case freezeStalled(AppID, [StalledProcess])
    /// The shell could not freeze the app at all (a `cgroup.freeze` write failed; `error`: why). The app is
    /// thawed and stays `background` (`freeze-failed`), never reported suspended.
    case freezeFailed(AppID, error: String)
    /// SPEC §14: the cgroup of an app the core holds frozen was thawed by someone else: frozen again at once.
    case thawedExternally(AppID)
}

/// What keeps the system from idling into sleep (SPEC §14): the apps with live background work and how
/// much of it each kind there is, as of the change that made the set of apps what it is.
public struct IdleInhibition: Hashable, Sendable {
    /// The apps with live work, in app-id order.
    public var apps: [AppID]
    /// Live background tasks and manager holds.
    public var assertions: Int
    /// Running scheduled tasks.
    public var tasks: Int
    /// Live continuous-mode activities.
    public var activities: Int

    /// A description of live work.
    public init(apps: [AppID], assertions: Int, tasks: Int, activities: Int) {
        self.apps = apps
        self.assertions = assertions
        self.tasks = tasks
        self.activities = activities
    }
}
