import BGTaskCore

// The journal layer's English (issue 13): the core hands over a decision's structured facts, this file
// turns them into the one human sentence of `MESSAGE`, the same for the journal, `Monitor` and `Explain`.

extension Decision {
    /// `MESSAGE`: one human sentence, rendered from the decision's fields and ``DecisionDetail``.
    var message: String { DecisionMessages.render(self) }
}

/// Renders a decision's `MESSAGE`.
enum DecisionMessages {
    static func render(_ d: Decision) -> String {
        // Made where a sentence uses them (each uses two or three), not all five up front.
        var app: String { d.app.map(\.description) ?? "?" }
        var task: String { d.taskID.map(\.description) ?? "?" }
        var activity: String { d.activityID.map(\.description) ?? "?" }
        var identifier: String { d.taskName ?? "?" }
        var named: String { d.taskName.map { " (\($0))" } ?? "" }
        switch d.detail {
        case .launching(let foreground, let reason):
            return "launching \(app) into the \(ground(foreground)) (\(reason.rawValue))"
        case .launchFailed(let error):
            return "could not launch \(app): \(error)"
        case .launched(let foreground, let reason):
            let pid = d.pid.map { " (pid \($0))" } ?? ""
            return "\(app)\(pid) launched into the \(ground(foreground)) (\(reason.rawValue))"
        case .lateLaunchKilled(let pid?):
            return "\(app) was started (pid \(pid)) after its launch was called off: ending it"
        case .lateLaunchKilled(nil):
            return "the launch of \(app) was called off: ending anything left in its cgroup"
        case .becameActive:
            return "\(app) is active"
        case .cameToForeground:
            return "\(app) came to the foreground"
        case .wentToBackground(let budget):
            return "\(app) went to the background with \(budget) of background time"
        case .interrupted:
            return "\(app) was interrupted"
        case .interruptionEnded:
            return "\(app)'s interruption ended"
        case .resignedActive:
            return "\(app) is inactive: none of its scenes is active"
        case .cameToForegroundInactive:
            return "\(app) came to the foreground, inactive: a scene of it is visible, none active"
        case .sceneChanged(let scene, let from, let to):
            return "scene \(scene) of \(app) " + (from.map { "went from \($0.rawValue) to \(to.rawValue)" } ?? "connected, \(to.rawValue)")
        case .snapshotsNotAcknowledged(let missing, let within):
            return "\(missing) scene snapshot\(missing == 1 ? " was" : "s were") not acknowledged by \(app) within \(within): suspending it regardless"
        case .suspended:
            return "suspended \(app): no background task, activity or scheduled task holds it"
        case .resumed:
            return "resumed \(app) (\(d.reason.rawValue))"
        case .exemptFromFreezing:
            return "did not suspend \(app): it is exempt from freezing"
        case .suspensionDeferredForLocks(let locks, let recheckIn, let terminateIn):
            return "did not suspend \(app): it holds a lock another process waits for (\(list(locks))); "
                + "trying again every \(recheckIn), terminating it if still waited for in \(terminateIn)"
        case .resumedForContendedLock(let locks, let terminateIn):
            return "resumed \(app) into the background: another process waits for a lock it holds (\(list(locks))); "
                + "terminating it if still waited for in \(terminateIn)"
        case .freezeAbandoned(let stalled, let after, let attempt, let retryIn):
            let next = retryIn.map { "trying again in \($0)" } ?? "terminating it"
            return "could not suspend \(app): not frozen within \(after) (attempt \(attempt) in a row); thawed, it stays "
                + "in the background; processes that did not stop: \(stalled.map(\.description).joined(separator: ", ")); \(next)"
        case .freezeNotMade(let error, let retryIn):
            return "could not suspend \(app): \(error); it stays in the background, trying again in \(retryIn)"
        case .freezeFellBack(let error):
            return "cannot freeze \(app) (\(error)): stopping it with signals"
        case .refrozenAfterExternalThaw:
            return "suspended \(app) again: its cgroup was thawed by someone else"
        case .launchCancelled(let cause):
            return "cancelled the launch of \(app): \(text(cause))"
        case .killedSuspended(let cause):
            return "killed suspended \(app) without events: \(text(cause))"
        case .willTerminateSent(let cause, let sigtermIn):
            return "terminating \(app): \(text(cause)); will-terminate sent, SIGTERM in \(sigtermIn)"
        case .sigtermSent(let cause, let killIn):
            return "terminating \(app): \(text(cause)); SIGTERM, SIGKILL in \(killIn)"
        case .noExitAfterWillTerminate(let within):
            return "\(app) did not exit within \(within) of will-terminate: SIGTERM"
        case .noExitAfterSigterm(let within):
            return "\(app) did not exit within \(within) of SIGTERM: SIGKILL"
        case .exited(let terminated, let held):
            let releasing = held > 0 ? "; released \(held) assertion\(held == 1 ? "" : "s")/activit\(held == 1 ? "y" : "ies")" : ""
            return terminated
                ? "\(app) exited after termination (\(d.reason.rawValue))\(releasing)" : "\(app) exited by itself\(releasing)"
        case .lastInstanceGone(let instance, let terminated):
            return terminated
                ? "\(app) exited after termination (\(d.reason.rawValue)): its last instance \(instance) is gone"
                : "\(app) exited by itself: its last instance \(instance) is gone"
        case .newInstanceTerminated(let instance):
            return "\(app) is being terminated: its new instance \(instance) goes with it"
        case .eventStreamClosed:
            return "\(app) closed its event stream and is considered gone"
        case .orphanKilled(let pid):
            return "\(app) closed its event stream and is considered gone: killed what was left of its process (pid \(pid))"
        case .adopted(let instance):
            return "adopted \(app), started by others (\(instance))"
        case .adoptedAnotherInstance(let instance, let back):
            return "adopted another instance of \(app) (\(instance))\(back ? ": back to the foreground" : "")"
        case .releasedFromManagement(let instances):
            let why = d.reason == .adoptionChanged
                ? "[Apps] Adopt= or AdoptFrom= changed: its instance is no longer watched"
                : "its manifest or desktop entry was removed"
            return "released \(app) from management: \(why); its instances, started by others, keep running "
                + "unfrozen (\(instances.map(\.rawValue).joined(separator: ", ")))"
        case .resumedForRelease:
            return "resumed \(app) (\(d.reason.rawValue)): released from management"
        case .assertionDenied(let live):
            let why = d.reason == .tooManyAssertions ? "it already holds \(live) live background tasks" : self.why(d.reason)
            return "denied a background task\(named) to \(app): \(why)"
        case .assertionGranted:
            let left = d.remaining.map { ", \($0) of background time left" } ?? ""
            return "granted background task \(task)\(named) to \(app)\(left)"
        case .holdDenied:
            return "denied a manager hold on \(app): \(why(d.reason))"
        case .holdGranted:
            return "granted manager hold \(task)\(named) on \(app): it runs without a time budget until the hold ends"
        case .assertionExpiring(let left):
            return "background task \(task)\(named) of \(app) expires in \(left)"
        case .unknownAssertionEnded:
            return "\(app) ended background task \(task), which is unknown or already ended"
        case .assertionEnded:
            return "\(app) ended background task \(task)\(named)"
        case .holdEndedByDisconnect:
            return "manager hold \(task) on \(app) ended: its connection closed"
        case .assertionReleasedByDisconnect:
            return "released background task \(task) of \(app): its connection closed"
        case .activityDenied(let mode):
            let why: String
            switch d.reason {
            case .modeNotDeclared: why = "its manifest does not declare \(mode.rawValue)"
            case .modeNotContinuous: why = "\(mode.rawValue) is not a continuous mode"
            default: why = self.why(d.reason)
            }
            return "denied a \(mode.rawValue) activity to \(app): \(why)"
        case .activityGranted(let mode):
            return "granted \(mode.rawValue) activity \(activity) to \(app)"
        case .unknownActivityEnded:
            return "\(app) ended activity \(activity), which is unknown or already ended"
        case .activityEnded(let mode):
            return "\(app) ended \(mode.rawValue) activity \(activity)"
        case .activityReleasedByDisconnect(let mode):
            return "released \(mode.rawValue) activity \(activity) of \(app): its connection closed"
        case .taskDenied:
            let why = d.reason == .invalidState ? "that task is already running" : self.why(d.reason)
            return "did not run task \(identifier) of \(app): \(why)"
        case .taskWaiting(let kind):
            return "\(kind.rawValue) task \(identifier) of \(app) is due and waits until \(app) enters the background"
        case .taskStarted(let kind, let budget):
            return "running \(kind.rawValue) task \(identifier) of \(app) for at most \(budget)"
        case .unknownTaskCompleted:
            return "\(app) completed task \(identifier), which is not running"
        case .taskCompleted(let kind, let success):
            return "\(app) completed \(kind.rawValue) task \(identifier)\(success ? "" : " unsuccessfully")"
        case .taskExpiring(let kind, let left):
            return "\(kind.rawValue) task \(identifier) of \(app) expires in \(left)"
        case .wakeDenied:
            return "did not wake \(app) for a remote notification (\(d.reason.rawValue))"
        case .wakeDelivered(let budget):
            return "delivered a remote notification to \(app), which may run for \(budget)"
        case .notificationNotDelivered(let name):
            return "did not deliver notification \(name) to \(app): \(why(d.reason))"
        case .notificationQueued(let name, let replaced):
            return "queued notification \(name) for suspended \(app)\(replaced ? ", replacing the one queued earlier" : "")"
        case .notificationQueuedDroppingOldest(let name, let dropped):
            return "queued notification \(name) for suspended \(app); its queue was full, dropped the oldest (\(dropped))"
        case .notificationDelivered(let name):
            return "delivered notification \(name) to \(app)"
        case .memoryWarningSent:
            return "sent memory-warning to \(app)"
        case .callerNotAppUser(let method, let caller):
            return "Denied \(method) for \(app) to \(caller): not the app's user"
        case .acknowledgeNotAppUser(let event, let caller):
            return "Denied Acknowledge of event \(event) of \(app) to \(caller): not the app's user"
        case .systemSleep(let live?):
            return "the system is going to sleep with live background work: \(SystemSleepWords.why(live))"
        case .systemSleep(nil):
            return "the system is going to sleep; no background work is live"
        case .resumedForBusCall(let sender, let member, let budget):
            return "resumed \(app) for \(budget): a method call \(member) from \(sender) on the session bus waits for it"
        case .refresh(let subject):
            return RefreshMessages.message(subject, reason: d.reason, app: d.app)
        case .note(let text):
            return text
        }
    }

    private static func ground(_ foreground: Bool) -> String { foreground ? "foreground" : "background" }

    /// The clause after "denied …:" for the reasons shared by several denials.
    private static func why(_ reason: Reason) -> String {
        switch reason {
        case .terminating: return "it is being terminated"
        case .notRunning: return "it is not running"
        case .budgetExhausted: return "its background time is spent"
        case .notLifecycleAware: return "it is not lifecycle-aware"
        default: return reason.rawValue
        }
    }

    /// The clause naming why a termination began.
    static func text(_ cause: TerminationCause) -> String {
        switch cause {
        case .requested: return "requested"
        case .manifestRemoved: return "its manifest was removed"
        case .noCheckIn(let within, let again): return "it did not check in\(again ? " again" : "") within \(within)"
        case .notAcknowledged(let within): return "did-enter-background was not acknowledged within \(within)"
        case .budgetEnded(let live, let budget):
            return "\(live) background task\(live == 1 ? " was" : "s were") still live when its budget of \(budget) ended"
        case .taskNotCompleted(let identifier): return "task \(identifier) was not completed in time"
        case .memoryPressure: return "memory pressure"
        case .daemonStopping: return "the daemon is stopping"
        case .contendedLock(let locks, let after):
            return "it still held a lock another process waits for \(after) after it was seen (\(list(locks)))"
        case .freezeTimedOut(let times, let stalled):
            return "\(times) freezes in a row did not complete (\(stalled.map(\.description).joined(separator: ", ")))"
        }
    }

    /// The locks of a SPEC §14 decision, one after the other.
    static func list(_ locks: [LockContention]) -> String {
        locks.map(\.description).joined(separator: "; ")
    }
}
