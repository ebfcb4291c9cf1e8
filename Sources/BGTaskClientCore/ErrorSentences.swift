public import BGTaskProtocol
public import BGTaskModel

/// The daemon's errors in words (SPEC §12: "the error on stderr in words"), for `bgtaskctl` and any client
/// that shows them to a person: what could not be done, to which app, why, and what to do where there is
/// something to do — `Cannot wake org.example.Mail: Low Power Mode is on; turn it off with 'bgtaskctl
/// low-power off'`. The kebab-case codes (`low-power-mode`, `not-running`) stay on the wire and in `--json`
/// output; here each has its sentence (a switch without `default`: a new reason or state does not compile
/// without one).
public enum ErrorSentences: Sendable {
    /// The sentence for a named error, without the error's name: `Cannot <action>: <why>[; <what to do>]`
    /// when the call is known, else the cause alone. nil for a name this library does not know.
    public static func sentence(for e: VarlinkError, method: ManagerMethod?, appId: String?) -> String? {
        let app = appId.flatMap { $0.isEmpty ? nil : $0 }
        guard let cause = cause(of: e, method: method, app: app) else { return nil }
        // These name what failed already.
        switch ManagerError(e) {
        case .noSuchApp?, .invalidConfiguration?, .holdLost?, .launchFailed?: return capitalized(cause, app: app)
        default: break
        }
        guard let method, let action = action(method, app: app) else { return capitalized(cause, app: app) }
        // systemctl's style: "Failed to stop foo.service: Unit foo.service not loaded."
        return "Cannot \(action): \(capitalized(cause, app: app))"
    }

    /// The sentence with a capital, unless it begins with an app ID (which keeps its case).
    static func capitalized(_ text: String, app: String?) -> String {
        if let app, text.hasPrefix(app) { return text }
        guard let first = text.first, first.isLowercase else { return text }
        return first.uppercased() + text.dropFirst()
    }

    /// What a Manager call does, in words (`wake org.example.Mail`); nil for read-only calls.
    public static func action(_ method: ManagerMethod, app: String?) -> String? {
        let a = app ?? "the app"
        switch method {
        case .launch: return "launch \(a)"
        case .foreground: return "bring \(a) to the foreground"
        case .background: return "move \(a) to the background"
        case .setFocus: return "give \(a) the focus"
        case .setSceneState: return "change a scene of \(a)"
        case .interrupt: return "interrupt \(a)"
        case .endInterruption: return "end the interruption of \(a)"
        case .terminate: return "terminate \(a)"
        case .setRefreshPolicy: return "change Background App Refresh for \(a)"
        case .setGlobalRefresh: return "change Background App Refresh"
        case .setLowPowerMode: return "change Low Power Mode"
        case .setConditions: return "change the power and network conditions"
        case .postNotification: return app.map { "post the notification to \($0)" } ?? "post the notification"
        case .wakeForRemoteNotification: return "wake \(a)"
        case .runTaskNow: return "run the task of \(a)"
        case .hold: return "hold \(a)"
        case .wakeForBusCall: return "wake \(a) for a bus call"
        case .reload: return "reload the configuration"
        case .getRecording: return "get the recording of the core's inputs"
        case .cancelContinuedTask: return "cancel the continued task of \(a)"
        case .listApps, .getApp, .listAssertions, .getSettings, .explain, .monitor, .stats, .listContinuedTasks: return nil
        }
    }

    /// Why a call was refused, in words.
    static func cause(of e: VarlinkError, method: ManagerMethod?, app: String?) -> String? {
        let denied = "permission denied: this needs root or membership of bgtaskd's ControlGroup="
        let a = app ?? "the app"
        if let m = ManagerError(e) {
            switch m {
            case .noSuchApp(let id): return "App \(id.isEmpty ? a : id) not found; 'bgtaskctl list' shows the apps bgtaskd knows"
            case .permissionDenied: return denied
            case .invalidState(let s): return state(s, app: a, method: method)
            case .invalidConfiguration(let message, _, _, _):
                return "Configuration not reloaded, the previous one stays in force: \(message)"
            case .launchFailed(let id, let message): return "Failed to launch \(id.isEmpty ? a : id): \(message)"
            case .holdLost(let id, _, let message): return "the hold on \(id.isEmpty ? a : id) was lost: \(message)"
            case .notPermitted(let i): return "the task identifier \(i) is not in the PermittedTaskIdentifiers= of \(a)'s manifest"
            case .unavailable(let r): return unavailable(r, app: a)
            case .modeNotDeclared(let mode): return "the manifest of \(a) does not declare the background mode \(mode); add it to BackgroundModes= there"
            case .notCheckedIn(let id): return "\(id.isEmpty ? a : id) has not checked in (it is not running, or knows nothing of bgtaskd)"
            case .alreadyCheckedIn(let id): return "\(id.isEmpty ? a : id) has already checked in from another process"
            }
        }
        if let x = AppError(e) {
            switch x {
            case .noSuchApp(let id): return "App \(id.isEmpty ? a : id) not found"
            case .permissionDenied: return "permission denied: only the app's own user (User=) or root may act for it"
            case .invalidState(let s): return state(s, app: a, method: method)
            case .notPermitted(let i): return "the task identifier \(i) is not in the PermittedTaskIdentifiers= of \(a)'s manifest"
            case .unavailable(let r): return unavailable(r, app: a)
            case .modeNotDeclared(let mode): return "the manifest of \(a) does not declare the background mode \(mode); add it to BackgroundModes= there"
            case .modeNotContinuous(let mode): return "the background mode \(mode) is not a continuous one"
            case .notCheckedIn(let id): return "\(id.isEmpty ? a : id) has not checked in"
            case .alreadyCheckedIn(let id): return "\(id.isEmpty ? a : id) has already checked in from another process"
            case .tooManyPendingTaskRequests(let kind): return "\(a) has as many pending \(kind) task requests as allowed"
            case .noSuchEvent(let id): return "there is no event \(id) waiting for an acknowledgement"
            }
        }
        switch ServiceError(e) {
        case .permissionDenied?: return denied
        case .invalidParameter(let parameter)?: return "the parameter \(parameter) is not valid"
        case .methodNotFound(let m)?, .methodNotImplemented(let m)?:
            return "the daemon does not know \(m) (is it older than bgtaskctl?)"
        case .interfaceNotFound(let i)?: return "the daemon does not serve the interface \(i) (is it older than bgtaskctl?)"
        case .expectedMore?: return "the call must be made with 'more' (a stream)"
        case nil: return nil
        }
    }

    /// `InvalidState`: the app's state in words, and what to do about it.
    public static func state(_ raw: String, app a: String, method: ManagerMethod?) -> String {
        guard let state = AppState(rawValue: raw) else { return "not possible while \(a) is in the state '\(raw)'" }
        let needsForeground = method == .interrupt || method == .endInterruption
        switch state {
        case .notRunning: return "\(a) is not running; start it with 'bgtaskctl launch \(a)'"
        case .suspended where needsForeground, .background where needsForeground:
            return "\(a) is \(state == .suspended ? "suspended" : "in the background"), not in the foreground; "
                + "bring it there first with 'bgtaskctl foreground \(a)'"
        case .suspended: return "\(a) is suspended"
        case .background: return "\(a) is in the background"
        case .active where method == .endInterruption: return "\(a) is active: it is not interrupted"
        case .active: return "\(a) is active"
        case .inactive where method == .interrupt: return "\(a) is inactive: it is already interrupted or launching"
        case .inactive: return "\(a) is inactive (launching, or interrupted)"
        }
    }

    /// `Unavailable`: why, in words, and what to do. `raw` is a ``Reason`` or one of the refresh calls'
    /// own reasons (`no-pending-request`, `state-not-saved`, `too-many-pending-task-requests`).
    public static func unavailable(_ raw: String, app a: String) -> String {
        switch raw {
        case "no-pending-request": return "\(a) has no pending task request under that identifier"
        case "state-not-saved": return "bgtaskd could not save its state file, so nothing was changed (see 'bgtaskctl log')"
        case "too-many-pending-task-requests": return "\(a) has as many pending task requests as allowed"
        default: break
        }
        guard let reason = Reason(rawValue: raw) else { return "not available to \(a) ('\(raw)')" }
        return reasonSentence(reason, app: a)
    }

    /// Why something is refused or unavailable, for each ``Reason`` (most never refuse a call; each still
    /// has its words, so that no code is ever printed bare).
    public static func reasonSentence(_ reason: Reason, app a: String) -> String {
        switch reason {
        case .refreshDisabled:
            return "Background App Refresh is off for \(a) or for every app; turn it on with 'bgtaskctl refresh \(a) on' "
                + "or 'bgtaskctl refresh --global on'"
        case .lowPowerMode: return "Low Power Mode is on; turn it off with 'bgtaskctl low-power off'"
        case .restricted: return "the administrator restricted Background App Refresh for \(a) with RefreshRestricted= in its manifest"
        case .networkMetered:
            return "the network is metered and refresh is allowed on unmetered networks only ('bgtaskctl refresh --global on' allows it)"
        case .noAssertions: return "nothing holds \(a) in the background"
        case .userRequest: return "a user or administrator asked for it"
        case .appRequest: return "\(a) asked for it itself"
        case .budgetExhausted: return "\(a) has spent its background time"
        case .budgetEnding: return "the background time of \(a) is about to end"
        case .didEnterBackgroundTimeout: return "\(a) did not acknowledge did-enter-background in time"
        case .expirationNotHandled: return "\(a) still held background tasks when its time ran out"
        case .clientDisconnected: return "the connection of \(a) closed"
        case .memoryPressure: return "the system is short of memory"
        case .launchTimeout: return "\(a) did not check in within LaunchTimeoutSec="
        case .launchFailed: return "the program of \(a) could not be started"
        case .tooManyAssertions: return "\(a) already holds as many background tasks as allowed (MaxBackgroundTasksPerApp=)"
        case .taskNotCompleted: return "the task of \(a) ran out of time"
        case .taskCompleted: return "the task of \(a) was completed"
        case .taskFailed: return "the task of \(a) failed"
        case .taskScheduled: return "a scheduled task of \(a) fell due"
        case .remoteNotification: return "a remote notification woke \(a)"
        case .appExited: return "\(a) exited"
        case .permissionDenied: return "the caller is neither the app's user nor root"
        case .assertionHeld: return "\(a) holds a background task"
        case .activityHeld: return "\(a) holds a background activity"
        case .anotherAppForeground: return "another app came to the foreground"
        case .interruption: return "\(a) is interrupted"
        case .interruptionEnded: return "the interruption of \(a) ended"
        case .checkedIn: return "\(a) checked in without being launched by bgtaskd"
        case .unknownIdentifier: return "the identifier is unknown or already ended"
        case .daemonRestarted: return "bgtaskd restarted"
        case .modeNotDeclared: return "the manifest of \(a) does not declare that background mode in BackgroundModes="
        case .modeNotContinuous: return "that background mode is not a continuous one"
        case .notRunning: return "\(a) is not running; start it with 'bgtaskctl launch \(a)'"
        case .notLifecycleAware: return "\(a) has LifecycleAware=no: it gets no events"
        case .terminating: return "\(a) is being terminated"
        case .invalidState: return "this does not fit the state of \(a) ('bgtaskctl status \(a)' shows it)"
        case .notificationPosted: return "a notification was delivered to \(a)"
        case .notificationQueued: return "a notification was queued for \(a) while it is suspended"
        case .queueFull: return "the notification queue of \(a) is full"
        case .manifestRemoved: return "the manifest of \(a) was removed"
        case .journalBudget: return "the journal budget of \(a) is spent"
        case .managerHold: return "a manager hold ('bgtaskctl hold') keeps \(a) running"
        case .daemonStopping: return "bgtaskd is stopping"
        case .waitingForBackground: return "the task waits until \(a) is in the background"
        case .exempt: return "\(a) is exempt from freezing"
        case .compositorFocus: return "the compositor gave the focus to another app"
        case .screenLocked: return "the session is locked or the screen blanked"
        case .adopted: return "\(a) was started by someone else and adopted"
        case .adoptionChanged: return "the adoption settings changed"
        case .systemSleep: return "the system is about to sleep"
        case .busCall: return "a program on the session bus called \(a)"
        case .holdsContendedLock: return "\(a) holds a file lock another process waits for"
        case .lockContended: return "another process started waiting for a file lock \(a) holds"
        case .contendedLock: return "\(a) kept a file lock others waited for longer than LockDeferralSec="
        case .freezeTimeout: return "\(a) could not be frozen within FreezeTimeoutSec= (a process in uninterruptible sleep)"
        case .freezeFailed: return "\(a) could not be frozen (its cgroup.freeze could not be written)"
        case .freezeFallback: return "\(a)'s cgroup could not be frozen: it was stopped with signals instead"
        case .thawedExternally: return "something other than bgtaskd thawed \(a)"
        case .snapshotRefused: return "a scene snapshot of \(a) was not a PNG or was larger than SnapshotMaxBytes="
        case .snapshotTimeout: return "\(a) did not write its scene snapshots within SnapshotTimeoutSec="
        case .closedByUser:
            return "the user closed \(a); it is not launched in the background until it is launched again ('bgtaskctl launch \(a)')"
        case .wakeRate: return "\(a) was woken for remote notifications as often as allowed this hour (RemoteWakesPerHour=)"
        case .taskStalled: return "the continued task of \(a) reported no progress within ContinuedTaskStallSec="
        case .userCancelled: return "the user cancelled the continued task of \(a)"
        case .bucketQuota:
            return "\(a) had as many background wakes in the last 24 hours as its standby bucket allows ([Buckets] in bgtaskd.conf; none apply on external power)"
        }
    }
}
