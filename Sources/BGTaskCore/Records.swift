// Internal bookkeeping of the machine. Nothing here is public: the shell sees snapshots (Snapshots.swift).

/// The acknowledgement phase after entering the background.
enum Grace: Hashable, Sendable, Codable {
    /// Acknowledged (or the grace window of a lifecycle-unaware app is over).
    case none
    /// `did-enter-background` was sent (or could not be: `nil`, no event stream) and is not yet acknowledged.
    case awaitingAck(EventID?)
    /// A lifecycle-unaware app keeps running until the end of the grace window.
    case window
}

/// Work that a background launch or resume carries to the app.
enum Work: Hashable, Sendable, Codable {
    case task(identifier: String, kind: TaskKind, reason: Reason)
    case remoteNotification(Payload?)
}

struct PendingLaunch: Hashable, Sendable, Codable {
    var reason: LaunchReason
    var foreground: Bool
    var cause: Reason
    var work: [Work]
}

struct TaskRun: Hashable, Sendable, Codable {
    var kind: TaskKind
    var started: Instant
    var deadline: Instant
    var warned: Bool
}

/// The window in which a remote notification keeps the app running (`RefreshTaskBudgetSec`, or until acknowledged).
struct Wake: Hashable, Sendable, Codable {
    var event: EventID?
    var deadline: Instant
}

struct Termination: Hashable, Sendable, Codable {
    enum Phase: Hashable, Sendable, Codable {
        case willTerminate
        case sigterm
        case killed
    }
    var reason: Reason
    var phase: Phase
}

/// Its fields are in an order that leaves little padding (the small ones beside the 9-byte optionals):
/// 216 bytes, where the order they were written in took 240.
struct AppRecord: Sendable, Codable {
    var manifest: AppManifest
    var state: AppState = .notRunning
    var pid: Int32?
    /// `pid` is the daemon's to freeze and signal: it spawned it, or it checked in from outside the cgroups
    /// others started (SPEC §13). A pid found in an adopted cgroup is that cgroup's.
    var pidIsOwn = false
    var connection: ConnectionID?
    var launchedByDaemon = false
    var interrupted = false
    /// The manifest is gone: forget the app once it has exited.
    var removed = false
    var termination: Termination?
    /// The kind and reason of its last decision (all the machine reads of it: a whole `Decision` per app,
    /// boxed, was ~180 bytes per app; docs/performance.md, "Where the memory at 10,000 apps goes").
    var lastDecision: LastDecision? = nil
    @OutOfLine var launch: PendingLaunch? = nil
    /// Where the budget is counted from; set while in the background or suspended.
    var backgroundSince: Instant?
    var grace: Grace = .none
    /// When the app last left the foreground (for `list --running`).
    var leftForeground: Instant?
    /// Live assertions in the order they were begun.
    var assertions: [TaskID] = []
    var activities: [ActivityID] = []
    var tasks: [String: TaskRun] = [:]
    /// Scheduled tasks that fell due while the app was in the foreground (SPEC §6): started when it enters the background.
    var waitingTasks: [Work] = []
    @OutOfLine var wake: Wake? = nil
    var notifications = NotificationQueue()
    /// For memory reclaim: least recently used first.
    var lastUsed: Instant
    /// Adopted cgroups holding the app's processes (LifecycleMachine+Adoption.swift).
    var instances: [InstanceID] = []
    /// A freeze ordered and not yet confirmed (``Input/freezeConfirmed(_:)``): its `suspend` decision,
    /// recorded once confirmed (or when the app leaves `suspended` first). Meanwhile the app is reported
    /// `background`.
    @OutOfLine var heldSuspend: Decision? = nil
    /// SPEC §14 (LifecycleMachine+Locks.swift, +FreezeTimeout.swift): what the device rules track.
    @Defaulted var device = DeviceRecord()
    /// SPEC §15: its scenes (LifecycleMachine+Scenes.swift).
    @Defaulted var scenes = AppScenes()

    var id: AppID { manifest.id }

    init(manifest: AppManifest, lastUsed: Instant) {
        self.manifest = manifest
        self.lastUsed = lastUsed
    }

    /// The state the app is reported in: `suspended` only once its freeze is confirmed.
    var reportedState: AppState { Self.reported(state, suspendHeld: heldSuspend != nil) }

    /// The state reported for `state` while a freeze is or is not held unconfirmed.
    static func reported(_ state: AppState, suspendHeld: Bool) -> AppState {
        state == .suspended && suspendHeld ? .background : state
    }

    /// Whether something entitles the app to run in the background.
    var holdsBackground: Bool { !assertions.isEmpty || !activities.isEmpty || !tasks.isEmpty || wake != nil }
}

struct AssertionRecord: Hashable, Sendable, Codable {
    var id: TaskID
    var app: AppID
    var connection: ConnectionID
    var name: String?
    var begun: Instant
    var warned: Bool
    /// A manager hold (SPEC §12): no time budget, never warned, journaled with reason `manager-hold`.
    var managerHold = false
    /// SPEC §16: a continued task (no time budget while it reports progress; LifecycleMachine+ContinuedTasks.swift).
    var continued = false
}

struct ActivityRecord: Hashable, Sendable, Codable {
    var id: ActivityID
    var app: AppID
    var connection: ConnectionID
    var mode: BackgroundMode
    var begun: Instant
}

struct Holdings: Hashable, Sendable, Codable {
    var tasks = TaskList()
    var activities: Set<ActivityID> = []
    var isEmpty: Bool { tasks.isEmpty && activities.isEmpty }
}

enum TimerKey: Hashable, Sendable, Codable {
    case launch(AppID)
    case grace(AppID)
    case budgetWarning(AppID)
    case budgetEnd(AppID)
    case escalation(AppID)
    case taskWarning(AppID, String)
    case taskEnd(AppID, String)
    case wakeEnd(AppID)
    /// The time limit of the daemon's stop.
    case stopLimit
    /// SPEC §14: look at the app's locks again (`LockRecheckSec`).
    case lockRecheck(AppID)
    /// SPEC §14: the app has held a contended lock for `LockDeferralSec`.
    case lockDeferral(AppID)
    /// SPEC §14: the app's freeze is not confirmed after `FreezeTimeoutSec`.
    case freezeTimeout(AppID)
    /// SPEC §14: try an abandoned freeze again (`FreezeRetrySec`).
    case freezeRetry(AppID)
    /// SPEC §15: the app's `scene-snapshot` round is over (`SnapshotTimeoutSec`).
    case snapshot(AppID)
    /// SPEC §16: a continued task reported no progress for `ContinuedTaskStallSec`.
    case continuedStall(AppID, TaskID)
}

/// SPEC §14: an app's locks and freeze attempts.
struct DeviceRecord: Hashable, Sendable, Codable, DefaultInitializable {
    /// An ``Action/observeLocks(_:_:)`` is out and not answered yet.
    var lockCheckPending = false
    /// The app held a lock when last looked at (frozen apps' locks are looked at every `LockRecheckSec`).
    var holdsLocks = false
    /// Since when the app has held a lock others wait for (`nil`: not seen), and what was seen.
    var contendedSince: Instant?
    var contention: [LockContention] = []
    /// `LockDeferralSec` has passed: the next contended observation terminates the app.
    var deferralOver = false
    /// Freezes in a row that did not complete (reset by one that does).
    var freezeTimeouts = 0
    /// No freeze is tried before this instant (an abandoned or failed one waits `FreezeRetrySec`).
    var retryAt: Instant?
}
