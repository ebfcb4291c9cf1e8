// The product's vocabulary (SPEC §2, §4, §5, §11): app states, events, decisions, reasons, modes.
// Raw values are the names the SPEC makes public: the same string on the wire, in the journal and in
// bgtaskctl's output. Shared by the core (which decides with them), the wire contract (BGTaskProtocol),
// the client library and the CLI, so no module mirrors another's enums.

/// The states of an app (SPEC §2). Raw values are the wire and journal strings.
public enum AppState: String, CaseIterable, Hashable, Sendable, Codable {
    /// No process.
    case notRunning = "not-running"
    /// In the foreground but not receiving input (launching, interrupted, or between two events of a sequence).
    case inactive
    /// In the foreground and receiving input.
    case active
    /// Running in the background (grace window, assertions, activities, tasks).
    case background
    /// Frozen: uses no CPU until thawed.
    case suspended

    /// Whether the app is in the foreground (`active` or `inactive`), where `backgroundTimeRemaining` is unlimited.
    public var isForeground: Bool { self == .active || self == .inactive }
}

/// The events the daemon delivers to an app (SPEC §2). Raw values are the wire strings.
public enum LifecycleEventKind: String, CaseIterable, Hashable, Sendable, Codable {
    /// The process has checked in after a launch; carries `launchReason`.
    case didFinishLaunching = "did-finish-launching"
    /// The app is about to come to the foreground.
    case willEnterForeground = "will-enter-foreground"
    /// The app is active.
    case didBecomeActive = "did-become-active"
    /// The app is about to lose the focus (interruption or backgrounding).
    case willResignActive = "will-resign-active"
    /// The app is in the background; must be acknowledged within the grace window.
    case didEnterBackground = "did-enter-background"
    /// An assertion or a scheduled task is about to run out of time; run its expiration handler.
    case backgroundTaskWillExpire = "background-task-will-expire"
    /// The app is being terminated; it has `WillTerminateTimeoutSec` to exit.
    case willTerminate = "will-terminate"
    /// Run a scheduled task (`identifier`), then call `CompleteTask`.
    case performTask = "perform-task"
    /// A posted or remote notification (`name`, `payload`).
    case notification
    /// The system is short of memory; release what can be rebuilt.
    case memoryWarning = "memory-warning"
    /// SPEC §15 (only to apps that checked in with `scenes: true`; each carries `sceneId`, `title`, `output`):
    /// a scene (one window of the app) is known from now on.
    case sceneWillConnect = "scene-will-connect"
    /// The scene is about to come to the foreground.
    case sceneWillEnterForeground = "scene-will-enter-foreground"
    /// The scene is active (receives input).
    case sceneDidBecomeActive = "scene-did-become-active"
    /// The scene is about to lose the focus.
    case sceneWillResignActive = "scene-will-resign-active"
    /// The scene is in the background.
    case sceneDidEnterBackground = "scene-did-enter-background"
    /// The scene is gone (its window closed).
    case sceneDidDisconnect = "scene-did-disconnect"
    /// Write a PNG of the scene to `path`, then acknowledge (the app is about to be frozen).
    case sceneSnapshot = "scene-snapshot"

    /// The scene events of SPEC §15, only for apps that checked in with `scenes: true`.
    public static let sceneCases: [LifecycleEventKind] = [
        .sceneWillConnect, .sceneWillEnterForeground, .sceneDidBecomeActive, .sceneWillResignActive,
        .sceneDidEnterBackground, .sceneDidDisconnect, .sceneSnapshot,
    ]

    /// Whether this is a scene event (SPEC §15).
    public var isSceneEvent: Bool { Self.sceneCases.contains(self) }
}

/// What a decision did (`BGTASKD_DECISION`, SPEC §11). Each has its own `MESSAGE_ID`.
public enum DecisionKind: String, CaseIterable, Hashable, Sendable, Codable {
    /// An app was launched (or started launching).
    case launch
    /// An app came to (or changed state within) the foreground.
    case foreground
    /// An app went to the background.
    case background
    /// An app was frozen.
    case suspend
    /// An app was thawed.
    case resume
    /// An app was (or is being) terminated, or exited.
    case terminate
    /// An assertion or activity was granted.
    case grant
    /// A request was refused.
    case deny
    /// An assertion or activity ended.
    case end
    /// An assertion or task is about to run out of time.
    case expire
    /// A scheduled task was started.
    case runTask = "run-task"
    /// A scheduled task was completed.
    case completeTask = "complete-task"
    /// A notification was delivered, queued or dropped.
    case notify
    /// A policy changed (refresh, low power mode, conditions).
    case policy
    /// Journal only (never a decision of the core): one entry counting an app's `grant`/`end` decisions of
    /// one interval that the journal budget did not journal one by one (SPEC §11, ``JournalBudget``).
    case coalesced
}

/// Why a decision was taken (`BGTASKD_REASON`, kebab-case, SPEC §11).
public enum Reason: String, CaseIterable, Hashable, Sendable, Codable {
    /// Nothing holds the app in the background any more: no assertion, activity, task or wake.
    case noAssertions = "no-assertions"
    /// A user, shell or administrator asked (`bgtaskctl`, the Manager interface).
    case userRequest = "user-request"
    /// The app itself asked (begin/end of an assertion or activity).
    case appRequest = "app-request"
    /// The app's background time budget is spent.
    case budgetExhausted = "budget-exhausted"
    /// The budget (of the app or of a task) ends in `ExpirationWarningSec`.
    case budgetEnding = "budget-ending"
    /// `did-enter-background` was not acknowledged in time.
    case didEnterBackgroundTimeout = "did-enter-background-timeout"
    /// Assertions were still live when the budget ended.
    case expirationNotHandled = "expiration-not-handled"
    /// The connection that owned an assertion, an activity or the event stream closed.
    case clientDisconnected = "client-disconnected"
    /// Background App Refresh is off for the app or globally.
    case refreshDisabled = "refresh-disabled"
    /// Low Power Mode is on.
    case lowPowerMode = "low-power-mode"
    /// The administrator restricted the app's refresh.
    case restricted
    /// The network is metered and refresh is allowed only on unmetered networks.
    case networkMetered = "network-metered"
    /// Memory pressure.
    case memoryPressure = "memory-pressure"
    /// A launched app did not check in within `LaunchTimeoutSec`.
    case launchTimeout = "launch-timeout"
    /// The launcher could not start the app.
    case launchFailed = "launch-failed"
    /// The app already holds `MaxBackgroundTasksPerApp` live assertions.
    case tooManyAssertions = "too-many-assertions"
    /// A scheduled task ran out of time.
    case taskNotCompleted = "task-not-completed"
    /// A scheduled task was completed successfully.
    case taskCompleted = "task-completed"
    /// A scheduled task was completed unsuccessfully.
    case taskFailed = "task-failed"
    /// A scheduled task's date and conditions were met.
    case taskScheduled = "task-scheduled"
    /// A remote notification woke the app.
    case remoteNotification = "remote-notification"
    /// The app's process exited by itself.
    case appExited = "app-exited"
    /// A caller that is not the app's user (nor root) asked on its behalf (SO_PEERCRED).
    case permissionDenied = "permission-denied"
    /// An assertion was begun for a suspended app: it is thawed.
    case assertionHeld = "assertion-held"
    /// A background-mode activity was begun for a suspended app: it is thawed.
    case activityHeld = "activity-held"
    /// Another app came to the foreground exclusively.
    case anotherAppForeground = "another-app-foreground"
    /// An interruption (a call, a system alert) began.
    case interruption
    /// The interruption ended.
    case interruptionEnded = "interruption-ended"
    /// The app checked in without having been launched by the daemon.
    case checkedIn = "checked-in"
    /// An identifier (assertion, activity, task) that is unknown or already ended: harmless.
    case unknownIdentifier = "unknown-identifier"
    /// The daemon started again and found what a previous run left (its apps are adopted or ended).
    case daemonRestarted = "daemon-restarted"
    /// The manifest does not declare the background mode.
    case modeNotDeclared = "mode-not-declared"
    /// The background mode is not continuous (only audio, location, voip, external-accessory, bluetooth are).
    case modeNotContinuous = "mode-not-continuous"
    /// The app is not running.
    case notRunning = "not-running"
    /// The app has `LifecycleAware=no`: it gets no events.
    case notLifecycleAware = "not-lifecycle-aware"
    /// The app is being terminated.
    case terminating
    /// The request does not fit the app's state.
    case invalidState = "invalid-state"
    /// A notification was posted and delivered.
    case notificationPosted = "notification-posted"
    /// A notification was queued for a suspended app.
    case notificationQueued = "notification-queued"
    /// The queue of a suspended app was full: its oldest notification was dropped.
    case queueFull = "queue-full"
    /// The app's manifest was removed.
    case manifestRemoved = "manifest-removed"
    /// Journal only: `grant`/`end` entries beyond the journal budget, counted in a `coalesced` entry.
    case journalBudget = "journal-budget"
    /// A manager hold (`bgtaskctl hold`, `io.bgtaskd.Manager.Hold`): no time budget, lives as long as its connection.
    case managerHold = "manager-hold"
    /// The daemon is stopping (SIGTERM): it terminates the apps it started.
    case daemonStopping = "daemon-stopping"
    /// A scheduled task fell due while the app was in the foreground: it waits until the app enters the background.
    case waitingForBackground = "waiting-for-background"
    /// The app is exempt from freezing (`[Apps] Exempt=`, `X-Bgtaskd-Exempt=true`; SPEC §13).
    case exempt
    /// The compositor changed which app is in front (`SetFocus`, bgtaskd-focus; SPEC §13).
    case compositorFocus = "compositor-focus"
    /// The session locked or the screen blanked: the foreground app went to the background (SPEC §13).
    case screenLocked = "screen-locked"
    /// A process started by someone else (the shell, systemd) was taken as an instance of the app (SPEC §13).
    case adopted
    /// `[Apps] Adopt=` or `AdoptFrom=` changed on reload: instances started by others outside what is watched
    /// now are released from management (thawed, they keep running).
    case adoptionChanged = "adoption-changed"
    /// The system is about to sleep (logind's `PrepareForSleep`; SPEC §14): one `policy` decision before it.
    case systemSleep = "system-sleep"
    /// A method call on the session bus was addressed to the suspended app (`WakeForBusCall`, bgtaskd-focus;
    /// SPEC §14): it runs in the background for `BusCallBudgetSec` so that the caller gets its answer.
    case busCall = "bus-call"
    /// SPEC §14: the app holds a lock another process waits for: its suspension is deferred.
    case holdsContendedLock = "holds-contended-lock"
    /// SPEC §14: a lock a frozen app holds became contended: the app was resumed into the background.
    case lockContended = "lock-contended"
    /// SPEC §14: the app still held a contended lock after `LockDeferralSec`: terminated.
    case contendedLock = "contended-lock"
    /// SPEC §14: a freeze was not confirmed within `FreezeTimeoutSec` (a process in uninterruptible sleep):
    /// abandoned, and after the third in a row the app is terminated.
    case freezeTimeout = "freeze-timeout"
    /// The freeze could not be made at all (a `cgroup.freeze` write failed): the app stays in the background.
    case freezeFailed = "freeze-failed"
    /// The daemon's freezer could not freeze the app (a `cgroup.freeze` write failed): its processes are
    /// stopped with SIGSTOP instead (SPEC §9), suspended once they all are.
    case freezeFallback = "freeze-fallback"
    /// SPEC §14: the cgroup of an app held frozen was thawed by someone else: frozen again.
    case thawedExternally = "thawed-externally"
    /// SPEC §15: not every `scene-snapshot` was acknowledged within `SnapshotTimeoutSec`: frozen regardless.
    case snapshotTimeout = "snapshot-timeout"
    /// SPEC §15: a scene snapshot was not a PNG or larger than `SnapshotMaxBytes`: deleted.
    case snapshotRefused = "snapshot-refused"
    /// SPEC §16: the user closed the app (`Terminate(userInitiated: true)`): no launch into the background
    /// for tasks or remote notifications until the user launches it again.
    case closedByUser = "closed-by-user"
    /// SPEC §16: more remote-notification wakes than `RemoteWakesPerHour=`.
    case wakeRate = "wake-rate"
    /// SPEC §16: the app's standby bucket's quota of background wakes per rolling 24 h is spent.
    case bucketQuota = "bucket-quota"
    /// SPEC §16: a continued task reported no progress for `ContinuedTaskStallSec`: it expired.
    case taskStalled = "task-stalled"
    /// SPEC §16: the user cancelled a continued task (`CancelContinuedTask`, `bgtaskctl cancel`).
    case userCancelled = "user-cancelled"
}

/// Why an app was launched (`launchReason` of `did-finish-launching`).
public enum LaunchReason: String, CaseIterable, Hashable, Sendable, Codable {
    /// By the user (Launch, Foreground) or by hand.
    case user
    /// To run a scheduled task.
    case backgroundTask = "background-task"
    /// For a remote notification.
    case remoteNotification = "remote-notification"
}

/// Background modes an app's manifest may declare (`BackgroundModes=`, SPEC §4).
public enum BackgroundMode: String, CaseIterable, Hashable, Sendable, Codable {
    /// Playing audio.
    case audio
    /// Tracking location.
    case location
    /// Voice over IP.
    case voip
    /// Talking to an external accessory.
    case externalAccessory = "external-accessory"
    /// Talking to a Bluetooth device.
    case bluetooth
    /// May submit refresh tasks.
    case fetch
    /// May be woken for remote notifications.
    case remoteNotification = "remote-notification"
    /// May submit processing tasks.
    case processing

    /// Whether an activity of this mode keeps the app running without a time budget.
    public var isContinuous: Bool {
        switch self {
        case .audio, .location, .voip, .externalAccessory, .bluetooth: return true
        case .fetch, .remoteNotification, .processing: return false
        }
    }
}

/// The kind of a scheduled task (SPEC §6).
public enum TaskKind: String, CaseIterable, Hashable, Sendable, Codable {
    /// A short refresh task (`RefreshTaskBudgetSec`).
    case refresh
    /// A longer processing task (`ProcessingTaskBudgetSec`).
    case processing
}

/// How loud a decision is in the journal (its `PRIORITY`).
public enum Severity: String, CaseIterable, Hashable, Sendable, Codable, Comparable {
    /// Routine (`LOG_INFO`).
    case info
    /// Worth noticing: terminations, denials (`LOG_NOTICE`).
    case notice
    /// Something went wrong on the client's side but is harmless (`LOG_WARNING`).
    case warning

    /// The syslog priority number.
    public var syslogPriority: Int {
        switch self {
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        }
    }

    /// Quieter first.
    public static func < (lhs: Severity, rhs: Severity) -> Bool { lhs.syslogPriority > rhs.syslogPriority }
}

/// An app's Background App Refresh status (`refreshStatus`, UIBackgroundRefreshStatus; SPEC §5).
public enum RefreshStatus: String, CaseIterable, Hashable, Sendable, Codable {
    /// The administrator restricted the app (`RefreshRestricted=yes`): its own setting cannot turn refresh on.
    case restricted
    /// Refresh is off for the app, off globally, or Low Power Mode is on.
    case denied
    /// The daemon may launch or wake the app for scheduled tasks and remote notifications.
    case available
}

/// The global Background App Refresh setting (`BackgroundAppRefresh=`, `SetGlobalRefresh(mode)`).
public enum RefreshMode: String, CaseIterable, Hashable, Sendable, Codable {
    /// Refresh allowed.
    case on
    /// Refresh allowed only while the network is not metered (iOS's "Wi-Fi").
    case unmetered
    /// Refresh off for every app.
    case off
}

/// The network as `SetConditions(network:)` describes it.
public enum NetworkCondition: String, CaseIterable, Hashable, Sendable, Codable {
    /// No network: requests with `requiresNetwork` wait.
    case none
    /// A metered network (mobile data): refresh waits when the global setting is `unmetered`.
    case metered
    /// An unmetered network.
    case unmetered
}
