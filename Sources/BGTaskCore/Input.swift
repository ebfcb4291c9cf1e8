/// Past-tense facts the shell feeds to ``LifecycleMachine/handle(_:now:)``.
///
/// Requests (`…Requested`, `appCheckedIn`, `eventAcknowledged`, `taskCompleted`, …) produce exactly one
/// ``Action/reply(_:)``; facts about processes and connections produce none.
public enum Input: Hashable, Sendable, Codable {
    /// A manifest was loaded (or reloaded: the app's state is kept). Replies `.ok`.
    case appRegistered(AppManifest)
    /// Manifests loaded (at start, on reload), each taken as ``appRegistered(_:)`` in this order, the app
    /// table grown once for those not known yet (10,000 manifests: one input and one allocation, not an input
    /// and a copy of the table as it grows per app). Replies none.
    case appsRegistered([AppManifest])
    /// A manifest disappeared on reload. A running app is terminated (`manifest-removed`) and forgotten at exit.
    case appUnregistered(AppID)
    /// The configuration was (re)loaded; new deadlines use it, armed ones keep their instants. Boxed
    /// (`indirect`), as `continuedTaskRequested` is: inputs are copied on the way to the core, and these two
    /// payloads made every input 152 bytes where the others need 74.
    indirect case configurationChanged(LifecycleConfig)
    /// `Launch(appId, background?)`. A foreground launch of an app already running foregrounds it.
    case launchRequested(AppID, background: Bool, exclusive: Bool)
    /// The shell started the process of a ``Action/launch(_:_:_:)``. A process the core no longer expects
    /// (the launch was called off meanwhile, the app is unknown) is killed.
    case appLaunched(AppID, pid: Int32)
    /// The shell could not start the process (`message`: the launcher's text). The app's own cgroup is
    /// killed (a launcher that answered too late may have started something there).
    case launchFailed(AppID, message: String)
    /// `CheckIn(appId)` on `connection`, which becomes the app's event stream. `inAdoptedCgroup`: the process
    /// `pid` lives in a cgroup started by others (SPEC §13), so the daemon's own freezer does not act on it.
    case appCheckedIn(AppID, connection: ConnectionID, pid: Int32?, inAdoptedCgroup: Bool = false)
    /// `CheckIn(appId, scenes: true)`: as ``appCheckedIn(_:connection:pid:inAdoptedCgroup:)``, and the app gets
    /// scene events and `scene-snapshot` (SPEC §15).
    case appCheckedInForScenes(AppID, connection: ConnectionID, pid: Int32?, inAdoptedCgroup: Bool = false)
    /// `SetSceneState(appId, sceneId, state, title?, output?)` (SPEC §15; `reason`: `user-request` from
    /// bgtaskctl, `compositor-focus` from bgtaskd-focus): the app's state follows its scenes. Replies `.ok`,
    /// or `noSuchApp` / `invalidState` (not running, terminating, too many scenes).
    case sceneStateChanged(AppID, SceneID, SceneState, title: String?, output: String?, reason: Reason)
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
    /// SPEC §16: `BeginContinuedTask` on `connection`, which owns it. Only while the app is active (else
    /// ``Reply/invalidState(_:)``); replies ``Reply/taskID(_:)``.
    indirect case continuedTaskRequested(AppID, connection: ConnectionID, ContinuedTaskRequest)
    /// SPEC §16: `UpdateTaskProgress`. Replies `.ok`, or `invalidState` for a task that is not a live continued task.
    case taskProgressReported(AppID, TaskID, TaskProgress)
    /// SPEC §16: `CancelContinuedTask` (the user): the task expires (`user-cancelled`). Replies `.ok` or
    /// `invalidState`.
    case continuedTaskCancelled(AppID, TaskID)
}

/// What keeps the system from idling into sleep (SPEC §14): the apps with live background work and how
/// much of it each kind there is, as of the change that made the set of apps what it is.
public struct IdleInhibition: Hashable, Sendable, Codable {
    /// The first apps with live work, in app-id order: at most ``namedLimit`` (what a sentence names).
    /// The action is kept by the input recording at every change of the set: a list of every app would
    /// make n apps taking up work cost O(n²) bytes there (and an O(n) copy of the core's list each time).
    public var apps: [AppID]
    /// How many apps have live work.
    public var appCount: Int
    /// Live background tasks and manager holds.
    public var assertions: Int
    /// Running scheduled tasks.
    public var tasks: Int
    /// Live continuous-mode activities.
    public var activities: Int

    /// Apps named in ``apps`` at most.
    public static let namedLimit = 8

    /// A description of live work: `apps` in app-id order (the first ``namedLimit`` are kept), `appCount`
    /// of them in all (default: `apps.count`).
    public init(apps: some Collection<AppID>, appCount: Int? = nil, assertions: Int, tasks: Int, activities: Int) {
        self.apps = Array(apps.prefix(Self.namedLimit))
        self.appCount = appCount ?? apps.count
        self.assertions = assertions
        self.tasks = tasks
        self.activities = activities
    }
}
