/// What a decision was about, as structured facts (issue 13): the core holds no English. The shell's
/// journal layer (`BGTaskDaemon/Journal/DecisionMessages.swift`) renders the `MESSAGE` of each from the
/// decision's fields (app, reason, task, activity, pid) and these facts.
public enum DecisionDetail: Hashable, Sendable, Codable {
    // Launch and check-in
    /// A launch was started.
    case launching(foreground: Bool, LaunchReason)
    /// The process could not be started; `error` is the launcher's own text.
    case launchFailed(error: String)
    /// The launch sequence was delivered (pid in the decision).
    case launched(foreground: Bool, LaunchReason)
    /// A process started after its launch was called off (or an answer came for no launch): killed.
    case lateLaunchKilled(pid: Int32?)

    // Foreground and background
    /// An inactive app became active again.
    case becameActive
    /// A background or suspended app came to the foreground.
    case cameToForeground
    /// The app entered the background with this budget.
    case wentToBackground(budget: TimeSpan)
    /// The app was interrupted (`will-resign-active`).
    case interrupted
    /// The interruption ended.
    case interruptionEnded
    /// SPEC §15: an active app's last active scene left it: inactive (`will-resign-active`).
    case resignedActive
    /// SPEC §15: a background or suspended app came to the foreground inactive (a scene of it is visible,
    /// none active).
    case cameToForegroundInactive
    /// SPEC §15: one of the app's scenes changed state (`from` nil: a new scene); the app's state did not.
    case sceneChanged(SceneID, from: SceneState?, to: SceneState)
    /// SPEC §15: `missing` scene snapshots were not acknowledged within `within`: frozen regardless.
    case snapshotsNotAcknowledged(missing: Int, within: TimeSpan)

    // Suspension
    /// Frozen: nothing holds the app.
    case suspended
    /// Thawed (why: the decision's reason).
    case resumed
    /// Not frozen: the app is exempt.
    case exemptFromFreezing
    /// SPEC §14: not frozen: the app holds locks others wait for; tried again in `recheckIn`, terminated
    /// if they are still waited for in `terminateIn`.
    case suspensionDeferredForLocks([LockContention], recheckIn: TimeSpan, terminateIn: TimeSpan)
    /// SPEC §14: thawed: a lock the frozen app holds is waited for; terminated if it still is in `terminateIn`.
    case resumedForContendedLock([LockContention], terminateIn: TimeSpan)
    /// SPEC §14: the freeze was not confirmed within `after`: abandoned (the app thawed), these processes did
    /// not stop; attempt `attempt` in a row; tried again in `retryIn` (`nil`: not again, terminated).
    case freezeAbandoned([StalledProcess], after: TimeSpan, attempt: Int, retryIn: TimeSpan?)
    /// The freeze could not be made (`error`); tried again in `retryIn`.
    case freezeNotMade(error: String, retryIn: TimeSpan)
    /// The freezer could not freeze the app (`error`): it is stopped with SIGSTOP instead.
    case freezeFellBack(error: String)
    /// SPEC §14: frozen again: someone else thawed the app's cgroup.
    case refrozenAfterExternalThaw

    // Termination
    /// A launch was cancelled before its process existed.
    case launchCancelled(TerminationCause)
    /// A suspended app was killed without events.
    case killedSuspended(TerminationCause)
    /// `will-terminate` was sent; SIGTERM follows after `sigtermIn`.
    case willTerminateSent(TerminationCause, sigtermIn: TimeSpan)
    /// SIGTERM was sent; SIGKILL follows after `killIn`.
    case sigtermSent(TerminationCause, killIn: TimeSpan)
    /// No exit within `within` of `will-terminate`: SIGTERM.
    case noExitAfterWillTerminate(within: TimeSpan)
    /// No exit within `within` of SIGTERM: SIGKILL.
    case noExitAfterSigterm(within: TimeSpan)
    /// The process exited; `terminated`: after a termination (its reason is the decision's); `released`:
    /// assertions and activities it still held.
    case exited(terminated: Bool, released: Int)
    /// The last adopted instance of an app started by others went away.
    case lastInstanceGone(InstanceID, terminated: Bool)
    /// An app being terminated got a new instance: it goes too.
    case newInstanceTerminated(InstanceID)
    /// An app started by hand closed its event stream and counts as gone.
    case eventStreamClosed
    /// The event stream of an app the daemon started closed and the app counts as gone: what is left of
    /// its process (pid) is killed rather than left unmanaged.
    case orphanKilled(pid: Int32)

    // Adoption
    /// A stopped app's cgroup appeared: adopted, active.
    case adopted(InstanceID)
    /// Another instance of a running app.
    case adoptedAnotherInstance(InstanceID, backToForeground: Bool)
    /// An app running only as instances others started, released from management (why: the reason,
    /// `manifest-removed` or `adoption-changed`): they keep running, unfrozen.
    case releasedFromManagement(instances: [InstanceID])
    /// Thawed as it is released from management.
    case resumedForRelease

    // Assertions and manager holds
    /// A background task was denied (why: the reason; `live`: the live count, for too-many-assertions).
    case assertionDenied(live: Int)
    /// A background task was granted (remaining in the decision).
    case assertionGranted
    /// A manager hold was denied (why: the reason).
    case holdDenied
    /// A manager hold was granted.
    case holdGranted
    /// A background task will expire in `in`.
    case assertionExpiring(in: TimeSpan)
    /// An unknown or ended background task was ended.
    case unknownAssertionEnded
    /// A background task (or hold) was ended by its owner.
    case assertionEnded
    /// A manager hold ended with its connection.
    case holdEndedByDisconnect
    /// A background task was released with its connection.
    case assertionReleasedByDisconnect

    // Activities
    /// An activity was denied (why: the reason).
    case activityDenied(BackgroundMode)
    /// An activity was granted.
    case activityGranted(BackgroundMode)
    /// An unknown or ended activity was ended.
    case unknownActivityEnded
    /// An activity was ended by its owner.
    case activityEnded(BackgroundMode)
    /// An activity was released with its connection.
    case activityReleasedByDisconnect(BackgroundMode)

    // Scheduled tasks and remote notifications
    /// A scheduled task was not run (why: the reason; identifier: the decision's task name).
    case taskDenied
    /// A due task waits for the app to enter the background.
    case taskWaiting(TaskKind)
    /// A scheduled task started with this budget.
    case taskStarted(TaskKind, budget: TimeSpan)
    /// A task that is not running was completed.
    case unknownTaskCompleted
    /// A task was completed (`success` false: unsuccessfully).
    case taskCompleted(TaskKind, success: Bool)
    /// A scheduled task will expire in `in`.
    case taskExpiring(TaskKind, in: TimeSpan)
    /// A remote-notification wake was denied (why: the reason).
    case wakeDenied
    /// A remote notification was delivered; the app may run for `budget`.
    case wakeDelivered(budget: TimeSpan)

    // Notifications and memory pressure
    /// A notification was not delivered (why: the reason).
    case notificationNotDelivered(name: String)
    /// A notification was queued for a suspended app (`replaced`: coalesced with a queued one).
    case notificationQueued(name: String, replaced: Bool)
    /// Queued with the queue full: the oldest (`dropped`) went.
    case notificationQueuedDroppingOldest(name: String, dropped: String)
    /// A notification was delivered.
    case notificationDelivered(name: String)
    /// `memory-warning` was sent.
    case memoryWarningSent

    // Permissions
    /// A call for the app came from a uid that is neither the app's nor root.
    case callerNotAppUser(method: String, caller: Caller)
    /// `Acknowledge` of the app's event came from a uid that is neither the app's nor root.
    case acknowledgeNotAppUser(event: EventID, caller: Caller)

    // System sleep and the session bus (SPEC §14)
    /// The system is about to sleep; `live`: the work that held the idle inhibitor, if any.
    case systemSleep(live: IdleInhibition?)
    /// Resumed for a method call `member` from `sender` on the session bus; runs for `budget`.
    case resumedForBusCall(sender: String, member: String, budget: TimeSpan)

    /// A decision of the refresh machine (SPEC §5, §6, §16): what it was about.
    case refresh(RefreshNotice.Subject)
    /// Text a shell component wrote itself (decisions made outside the lifecycle machine).
    case note(String)
}

/// Why a termination began, the detail of its decisions.
public enum TerminationCause: Hashable, Sendable, Codable {
    /// `Terminate` was called.
    case requested
    /// The manifest was removed on reload.
    case manifestRemoved
    /// A launched app did not check in (`again`: after its stream closed) within `within`.
    case noCheckIn(within: TimeSpan, again: Bool)
    /// `did-enter-background` was not acknowledged within `within`.
    case notAcknowledged(within: TimeSpan)
    /// `live` background tasks were still live when the budget ended.
    case budgetEnded(live: Int, budget: TimeSpan)
    /// A scheduled task was not completed in time.
    case taskNotCompleted(identifier: String)
    /// Memory pressure.
    case memoryPressure
    /// The daemon is stopping.
    case daemonStopping
    /// SPEC §14: the app still held these locks, waited for, `after` they were first seen contended.
    case contendedLock([LockContention], after: TimeSpan)
    /// SPEC §14: `times` freezes in a row were not confirmed in time.
    case freezeTimedOut(times: Int, stalled: [StalledProcess])
}

/// Who made a call, as the shell read it from the socket (`SO_PEERCRED`).
public struct Caller: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The calling process.
    public var pid: Int32
    /// Its uid.
    public var uid: UInt32
    /// Its primary gid.
    public var gid: UInt32

    /// A caller.
    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    /// The daemon's own side (root): every check passes.
    public static let trusted = Caller(pid: 0, uid: 0, gid: 0)

    /// As the journal names a peer: `pid 42 uid 1000`.
    public var description: String { "pid \(pid) uid \(uid)" }
}
