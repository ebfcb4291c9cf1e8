/// Imperatives for the shell, in the order it must perform them (events are never reordered).
///
/// State has already changed when the actions are returned (as in async-http-client's state machines):
/// the shell only performs them. Each carries what the shell needs to perform it.
public enum Action: Hashable, Sendable, Codable {
    /// Send `event` on `connection`, the app's event stream (a `CheckIn` reply with `continues`). Boxed
    /// (`indirect`), as `progressReported` is: an action is copied several times per call, and these two
    /// payloads made every action 192 bytes where the others need 48.
    indirect case deliver(AppID, ConnectionID, Event)
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
    /// SPEC §16: a continued task reported progress (or began): show it on `Monitor` (never journaled:
    /// progress comes every few seconds; the task's grant, expire and end are the decisions).
    indirect case progressReported(ContinuedTask)

    /// The decision this action carries, if any: every action that changes an app carries one.
    public var decision: Decision? {
        switch self {
        case .launch(_, _, let d), .thaw(_, _, let d), .terminate(_, _, let d), .kill(_, _, let d), .record(let d):
            return d
        case .freeze, .deliver, .reply, .release, .stopFinished, .holdLost, .memoryPressure, .taskStarted, .inhibitIdle,
            .verifyFrozen, .observeLocks, .inspectFreeze, .progressReported:
            return nil
        }
    }
}
