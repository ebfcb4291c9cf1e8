/// Who made a call: the connection it came on and the process behind it. A refusal journaled for the call
/// counts for them (the denial budget, ``DenialBudget``); its journal entry names the process
/// (`BGTASKD_PEER_PID`).
public struct CallOrigin: Hashable, Sendable, Codable {
    /// The connection the call came on (the one held when the caller is refused too often).
    public var connection: ConnectionID
    /// The calling process.
    public var caller: DenialBudget.Caller

    /// The origin of a call.
    public init(connection: ConnectionID, caller: DenialBudget.Caller) {
        self.connection = connection
        self.caller = caller
    }
}

/// Past-tense facts the shell feeds to ``DaemonCore/handle(_:now:)``: one type for every machine the
/// composite owns.
public enum CoreInput: Hashable, Sendable, Codable {
    /// An input of the lifecycle machine; `request`: the call it answers (its reply names it), `from`: who
    /// made that call (a refusal counts for them).
    case lifecycle(Input, request: RequestID?, from: CallOrigin?)
    /// A decision taken outside the core (the shell's own, e.g. a scene snapshot refused) is to be journaled;
    /// `from`: the call it answers. The composite decides its entry (the journal budget) and counts a refusal.
    case decisionTaken(Decision, from: CallOrigin?)
    /// The monotonic timer armed for ``DaemonCore/nextDeadline`` fired (early or late: both harmless).
    case deadlineReached
    /// The configuration was (re)loaded: the budgets' limits (from their next interval on).
    case budgetsConfigured(journal: JournalBudget.Limits, denial: DenialBudget.Limits)
    /// The daemon stops: the journal budget's current interval is summarised now rather than lost.
    case stopping
    /// The shell performed a `.freeze` and `partsAwaited` of its parts (the daemon's own freezer, the adopted
    /// cgroups) have not reported it done yet: the freeze is confirmed once they all have
    /// (``freezePartDone(_:)``, ``freezeChecked(_:_:)``), unless a thaw, kill or release of the app calls it
    /// off first. `own`: what the daemon's own freezer said (`frozen` too when it had no part); not `frozen`:
    /// its part is one of those awaited, and the core decides what follows (DaemonCore+Freezes.swift).
    case freezeStarted(AppID, partsAwaited: Int, own: FreezeFact)
    /// One part of the app's freeze under way (an adopted cgroup's) reports it done.
    case freezePartDone(AppID)
    /// The daemon's own freezer's answer to ``CoreAction/checkFreeze(_:_:late:)`` or
    /// ``CoreAction/freezeWithSignals(_:_:)``, or its report that the freeze is done (an inotify event).
    case freezeChecked(AppID, FreezeFact)
    /// An input of the refresh machine (SPEC §5, §6, §16); `request`: the refresh call it answers, `from`: who
    /// made it (DaemonCore+Refresh.swift).
    case refresh(RefreshInput, request: RequestID?, from: CallOrigin?)
    /// `WakeForRemoteNotification` with its payload: the refresh machine decides whether the app may be woken,
    /// the lifecycle machine delivers it and answers `request`.
    case remoteNotificationRequested(AppID, payload: Payload?, request: RequestID?, from: CallOrigin?)
    /// The wall-clock timer armed for ``DaemonCore/nextWallDeadline`` fired (early or late: both harmless).
    case wallDeadlineReached
}

/// Imperatives for the shell, in the order it must perform them: one type for every machine the
/// composite owns.
public enum CoreAction: Hashable, Sendable, Codable {
    /// Perform a lifecycle action. Its decision (``Action/decision``), if any, is journaled on its own when
    /// `journaled` (false: the journal budget counts it in a summary); its entry names `peer`'s process.
    case perform(Action, journaled: Bool, peer: DenialBudget.Caller?)
    /// Journal the journal budget's summaries (`coalesced`) of an interval that ended.
    case journalSummaries([JournalBudget.Summary])
    /// The caller was refused too often: do not read `connection` until `pause.until` (its new connections
    /// too, as `pause.holdNewConnections` says); journal it when `pause.firstOfUID`.
    case pauseConnection(CallOrigin, DenialBudget.Pause)
    /// The denial budget's interval ended: read the paused connections again.
    case releasePausedConnections
    /// Look whether the daemon's own freezer's freeze of the app is done (a plain look, no waiting) and feed
    /// ``CoreInput/freezeChecked(_:_:)``; `late`: it is not done after ``DaemonCore/lateFreeze`` (log the
    /// processes that still run, once).
    case checkFreeze(AppID, Processes, late: Bool)
    /// The freezer could not freeze the app (the `policy`/`freeze-fallback` decision before this says why):
    /// stop its processes with SIGSTOP and feed ``CoreInput/freezeChecked(_:_:)``.
    case freezeWithSignals(AppID, Processes)
    /// Answer the refresh call `to` names now.
    case answerRefresh(RefreshReply, to: RequestID)
    /// Persist the refresh machine's state as it is after this input (``DaemonCore/refresh``'s `state`: the
    /// latest, never an older copy); then, when `to` names a call, answer it with `answer` once the state is
    /// durable, or with `Unavailable` `state-not-saved` if the write failed.
    case saveRefreshState(answer: SavedAnswer?, to: RequestID?)
    /// The `Launch`/`Foreground` call `to` names started the app's spawn: its `ok` waits for the spawn's
    /// result (keep the call open; ``answerLaunch(_:to:failure:)`` answers it).
    case replyAwaitsLaunch(AppID, to: RequestID)
    /// The spawn a `Launch`/`Foreground` call waits for is done: answer it `ok`, or `LaunchFailed` with
    /// `failure` (the launcher's text).
    case answerLaunch(AppID, to: RequestID, failure: String?)
}

/// The answer a refresh call gets once the state is saved: the refresh machine's, or the lifecycle
/// machine's reply to the task run the call asked for (`RunTaskNow`).
public enum SavedAnswer: Hashable, Sendable, Codable {
    case refresh(RefreshReply)
    case lifecycle(Reply)
}

extension CoreAction {
    /// The decision the action carries, if any.
    public var decision: Decision? {
        switch self {
        case .perform(let action, _, _): return action.decision
        case .journalSummaries, .pauseConnection, .releasePausedConnections, .checkFreeze, .freezeWithSignals, .answerRefresh,
            .saveRefreshState, .replyAwaitsLaunch, .answerLaunch:
            return nil
        }
    }
}
