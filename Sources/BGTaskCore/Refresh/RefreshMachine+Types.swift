/// What Background App Refresh needs from the configuration (SPEC §5, §6): the defaults and, per app,
/// what its manifest declares. The shell resolves the files; a reload feeds a new one.
public struct RefreshConfig: Hashable, Sendable, Codable {
    /// One app's manifest, as refresh reads it.
    public struct App: Hashable, Sendable, Codable {
        /// `PermittedTaskIdentifiers=`.
        public var permittedIdentifiers: Set<String>
        /// `BackgroundModes=`.
        public var backgroundModes: Set<BackgroundMode>
        /// `BackgroundAppRefresh=`; `nil`: `DefaultAppRefresh=`.
        public var setting: Bool?
        /// `RefreshRestricted=`.
        public var restricted: Bool

        /// An app's refresh settings.
        public init(
            permittedIdentifiers: Set<String> = [], backgroundModes: Set<BackgroundMode> = [], setting: Bool? = nil,
            restricted: Bool = false
        ) {
            self.permittedIdentifiers = permittedIdentifiers
            self.backgroundModes = backgroundModes
            self.setting = setting
            self.restricted = restricted
        }
    }

    /// `BackgroundAppRefresh=` of bgtaskd.conf (a `SetGlobalRefresh` wins over it).
    public var mode: RefreshMode
    /// `DefaultAppRefresh=`.
    public var defaultAppRefresh: Bool
    /// `MinimumRefreshIntervalSec=`.
    public var minimumRefreshInterval: TimeSpan
    /// `ProcessingIdleSec=`.
    public var processingIdle: TimeSpan
    /// Every app with a manifest.
    public var apps: [AppID: App]
    /// SPEC §16: standby buckets, the remote-notification rate, aligned wakes (none by default here; the
    /// daemon's configuration has SPEC §16's defaults).
    public var energy: EnergyPolicyConfig

    /// A configuration.
    public init(
        mode: RefreshMode = .on, defaultAppRefresh: Bool = true, minimumRefreshInterval: TimeSpan = .minutes(15),
        processingIdle: TimeSpan = .seconds(60), apps: [AppID: App] = [:], energy: EnergyPolicyConfig = .unlimited
    ) {
        self.mode = mode
        self.defaultAppRefresh = defaultAppRefresh
        self.minimumRefreshInterval = minimumRefreshInterval
        self.processingIdle = processingIdle
        self.apps = apps
        self.energy = energy
    }
}

/// What the lifecycle core says about an app, as far as refresh needs it (read from its snapshot by the shell).
public struct RefreshAppFacts: Hashable, Sendable, Codable {
    /// The app's state.
    public var state: AppState
    /// It checked in (it can receive events).
    public var lifecycleAware: Bool
    /// It is being terminated.
    public var terminating: Bool
    /// Identifiers of the tasks it is running.
    public var runningTasks: Set<String>
    /// Identifiers of the tasks the core holds until the app has entered the background (SPEC §6).
    public var waitingTasks: Set<String>

    /// Facts about one app.
    public init(
        state: AppState, lifecycleAware: Bool = true, terminating: Bool = false, runningTasks: Set<String> = [],
        waitingTasks: Set<String> = []
    ) {
        self.state = state
        self.lifecycleAware = lifecycleAware
        self.terminating = terminating
        self.runningTasks = runningTasks
        self.waitingTasks = waitingTasks
    }

    /// The core will hold a task handed to it now until the app has entered the background (SPEC §6): the
    /// app is in the foreground, checked in and not being terminated.
    var holdsTaskUntilBackground: Bool { state.isForeground && lifecycleAware && !terminating }
}

/// Both clocks at one instant: requests' dates are on the wall clock, the idle rule on the monotonic one.
public struct RefreshNow: Hashable, Sendable, Codable {
    /// CLOCK_REALTIME.
    public var wall: RealtimeInstant
    /// CLOCK_MONOTONIC.
    public var monotonic: Instant

    /// The clocks as read together.
    public init(wall: RealtimeInstant, monotonic: Instant) {
        self.wall = wall
        self.monotonic = monotonic
    }
}

/// A fact for the ``RefreshMachine``: a call, a change of conditions or configuration, a deadline.
public enum RefreshInput: Hashable, Sendable, Codable {
    /// The saved state as read at start-up.
    case stateLoaded(RefreshState)
    /// The daemon is up (apps registered); `detectedPower` is what /sys/class/power_supply says, if anything.
    case started(detectedPower: Bool?)
    /// A new configuration (start-up, SIGHUP, `Reload`).
    case configurationChanged(RefreshConfig)
    /// `SubmitTaskRequest`.
    case taskSubmitted(AppID, TaskRequest)
    /// `CancelTaskRequest`.
    case taskCancelled(AppID, identifier: String)
    /// `CancelAllTaskRequests`.
    case allTasksCancelled(AppID)
    /// `RunTaskNow`: a pending request at once, bypassing its date and conditions but not the policy.
    case runNowRequested(AppID, identifier: String)
    /// `WakeForRemoteNotification`.
    case remoteNotificationRequested(AppID)
    /// `SetRefreshPolicy`.
    case appSettingRequested(AppID, enabled: Bool)
    /// `SetGlobalRefresh`.
    case globalModeRequested(RefreshMode)
    /// `SetLowPowerMode`.
    case lowPowerModeRequested(Bool)
    /// `SetConditions`; `nil` leaves a condition as it is.
    case conditionsRequested(onExternalPower: Bool?, network: NetworkCondition?)
    /// The power supply changed (detected, not set by a call).
    case powerDetected(Bool)
    /// The lifecycle core decided something that left the app in `state`.
    case appStateObserved(AppID, AppState)
    /// The lifecycle core started the task `identifier` (``Action/taskStarted(_:identifier:)``). A request
    /// handed to it while the app was in the foreground leaves the pending list now (SPEC §6).
    case taskStarted(AppID, identifier: String)
    /// The look again asked for by ``RefreshAction/reviewSoon``.
    case reviewRequested
    /// The wall-clock timer armed by ``RefreshAction/armWallTimer(_:)`` fired (early or late is harmless).
    case wallDeadlineReached
    /// SPEC §16: `Terminate(userInitiated: true)`: no launch into the background for tasks or remote
    /// notifications until the user launches the app again. Saves; no reply.
    case closedByUser(AppID)
    /// SPEC §16: the user launched the app or brought it to the foreground (a `launch` or `foreground`
    /// decision that left it in the foreground). No reply.
    case usedByUser(AppID)
}

/// Launch or wake an app for one of its task requests.
public struct RefreshRun: Hashable, Sendable, Codable {
    /// The app.
    public var app: AppID
    /// The request's identifier.
    public var identifier: String
    /// Refresh or processing.
    public var kind: TaskKind
    /// `task-scheduled` (it became due) or `user-request` (`RunTaskNow`).
    public var reason: Reason
    /// The lifecycle core's reply to this run answers the call being handled (`RunTaskNow`).
    public var answersCall: Bool
    /// Answer the call only once the state is saved (the request left the pending list). A flag, not a copy
    /// of the state: the shell saves the latest state, so the file never goes back to an older one.
    public var saveBeforeReply: Bool

    /// A run.
    public init(
        app: AppID, identifier: String, kind: TaskKind, reason: Reason, answersCall: Bool = false,
        saveBeforeReply: Bool = false
    ) {
        self.app = app
        self.identifier = identifier
        self.kind = kind
        self.reason = reason
        self.answersCall = answersCall
        self.saveBeforeReply = saveBeforeReply
    }
}

/// Why a refresh call is refused (the shell names them on the wire).
public enum RefreshCallError: Hashable, Sendable, Codable {
    /// `NoSuchApp`.
    case noSuchApp(AppID)
    /// `NotPermitted`: the identifier is not in `PermittedTaskIdentifiers=`.
    case notPermitted(String)
    /// `ModeNotDeclared`.
    case modeNotDeclared(BackgroundMode)
    /// `Unavailable` with a reason: a ``Reason``'s raw value, `no-pending-request` or `state-not-saved`.
    case unavailable(String)
    /// `TooManyPendingTaskRequests`.
    case tooManyPendingTaskRequests(TaskKind)

    /// `Unavailable` because nothing is pending under the identifier (`RunTaskNow`).
    public static let noPendingRequest = "no-pending-request"
    /// `Unavailable` because the state file could not be written.
    public static let stateNotSaved = "state-not-saved"
}

/// The answer to the call being handled.
public enum RefreshReply: Hashable, Sendable, Codable {
    /// Done.
    case ok
    /// Refused.
    case failure(RefreshCallError)
}

/// A refresh decision to journal, as structured facts; the shell renders the sentence.
public struct RefreshNotice: Hashable, Sendable, Codable {
    /// What the decision was about.
    public enum Subject: Hashable, Sendable, Codable {
        /// A due (or `RunTaskNow`) task request was not run.
        case taskNotRun(TaskKind, identifier: String)
        /// A task request was refused at submission; `mode` when its mode was not declared.
        case submissionRefused(TaskKind, identifier: String, mode: BackgroundMode?)
        /// A remote notification did not wake the app.
        case wakeRefused
        /// `SetRefreshPolicy(enabled: true)` of a restricted app.
        case appSettingRefused
        /// `SetRefreshPolicy` done; the app's status after it.
        case appSettingSet(enabled: Bool, status: RefreshStatus)
        /// `SetGlobalRefresh` done.
        case globalModeSet(RefreshMode)
        /// `SetLowPowerMode` done.
        case lowPowerModeSet(Bool)
        /// `SetConditions` done; the conditions after it.
        case conditionsSet(onExternalPower: Bool, network: NetworkCondition)
    }

    /// `deny` or `policy`.
    public var kind: DecisionKind
    /// `BGTASKD_REASON`.
    public var reason: Reason
    /// The app, if the decision is about one.
    public var app: AppID?
    /// The app's lifecycle state when decided.
    public var state: AppState?
    /// What it was about.
    public var subject: Subject
    /// Caused by the call being handled (its peer is journaled), not by a deadline or a condition.
    public var byCall: Bool

    /// A notice.
    public init(kind: DecisionKind, reason: Reason, app: AppID?, state: AppState?, subject: Subject, byCall: Bool) {
        self.kind = kind
        self.reason = reason
        self.app = app
        self.state = state
        self.subject = subject
        self.byCall = byCall
    }

    /// The task request's identifier, where the notice is about one (`BGTASKD_TASK_NAME`).
    public var taskName: String? {
        switch subject {
        case .taskNotRun(_, let identifier), .submissionRefused(_, let identifier, _): return identifier
        case .wakeRefused, .appSettingRefused, .appSettingSet, .globalModeSet, .lowPowerModeSet, .conditionsSet: return nil
        }
    }

    /// `notice` for a denial, `info` for a change of policy.
    public var severity: Severity { kind == .deny ? .notice : .info }
}

/// What the shell does for the ``RefreshMachine``, in order.
public enum RefreshAction: Hashable, Sendable, Codable {
    /// Feed the lifecycle core `taskRunRequested` (it launches or resumes the app).
    case run(RefreshRun)
    /// Feed the lifecycle core the remote notification of the call being handled (its reply answers the call).
    case wake(AppID)
    /// Post `refresh-status-changed` to the app (it is running and checked in).
    case announceStatus(AppID, status: RefreshStatus, previous: RefreshStatus)
    /// Journal (and show on Monitor) a decision.
    case record(RefreshNotice)
    /// Persist the state; then, if `reply` is given, answer the call with it (or with `Unavailable`
    /// `state-not-saved` if the write failed).
    case save(RefreshState, reply: RefreshReply?)
    /// Answer the call being handled now.
    case reply(RefreshReply)
    /// Arm the one wall-clock timer for this instant (`nil`: disarm); fire ``RefreshInput/wallDeadlineReached``.
    case armWallTimer(RealtimeInstant?)
    /// Feed ``RefreshInput/reviewRequested`` on the next turn of the queue (after the decision being recorded).
    case reviewSoon
    /// Feed the lifecycle core `waitingTaskCancelled`: the request of a task it holds until the app's
    /// background was cancelled, so the task must not start.
    case cancelWaiting(AppID, identifier: String)
}
