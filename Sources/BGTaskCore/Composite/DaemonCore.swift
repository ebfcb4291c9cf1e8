/// The daemon's one core: the lifecycle machine, the refresh machine, the journal budget and the denial
/// budget behind one ``CoreInput``, one ``CoreAction`` and one deadline per clock (monotonic:
/// ``peekNextDeadline()``; wall: ``nextWallDeadline``), as async-http-client's
/// `HTTPConnectionPool.StateMachine` wraps its HTTP/1 and HTTP/2 machines. The shell never merges the
/// machines' deadlines nor feeds one machine's output to another: this does (the lifecycle machine's
/// decisions reach the refresh machine, and its runs and wakes the lifecycle machine, in
/// DaemonCore+Refresh.swift).
///
/// Deterministic like its parts: the same inputs at the same instants give the same actions, which is
/// what record and replay (SPEC §17, ``CoreRecording``) rely on.
public struct DaemonCore: Sendable, Codable {
    /// The lifecycle machine (read-only from outside).
    public private(set) var lifecycle: LifecycleMachine
    private var journalBudget: JournalBudget
    private var denialBudget: DenialBudget
    /// Decisions counted in summaries rather than journaled one by one, since start (Stats).
    public private(set) var coalesced = 0
    /// `coalesced` summaries, since start (Stats).
    public private(set) var summaries = 0
    var out: [CoreAction] = []
    /// Freezes performed and not yet done, by app: how many parts have still to report it.
    private var freezesAwaited: [AppID: Int] = [:]
    /// The daemon's own freezer's part of each freeze under way (DaemonCore+Freezes.swift).
    var ownFreezes: [AppID: OwnFreeze] = [:]
    /// Background App Refresh (SPEC §5, §6, §16; read-only from outside). Its deadlines are on the wall clock.
    public internal(set) var refresh = RefreshMachine(config: RefreshConfig())
    /// Both clocks of the input being handled (the refresh machine's dates are on the wall clock).
    var clocks = RefreshNow(wall: RealtimeInstant(microsecondsSinceEpoch: 0), monotonic: Instant(microseconds: 0))
    /// Refresh inputs the lifecycle machine's actions caused (its decisions, a task started), taken once the
    /// actions before them are (DaemonCore+Refresh.swift).
    var refreshInbox: [RefreshInput] = []
    /// The refresh machine asked to look again (``RefreshAction/reviewSoon``).
    var reviewDue = false
    /// `Launch`/`Foreground` calls whose `ok` waits for their app's spawn, by app (DaemonCore+Launch.swift).
    var launchReplies: [AppID: [RequestID]] = [:]
    /// The `Launch`/`Foreground` call being handled, and whether it started its app's spawn.
    var launchCall: LaunchCall?
    /// The call whose lifecycle reply waits for the refresh state to be saved (`RunTaskNow`).
    var saveBeforeReply: RequestID?

    /// A core with no apps, with the lifecycle configuration and the budgets' limits of the first load.
    public init(
        lifecycle config: LifecycleConfig, journal: JournalBudget.Limits, denial: DenialBudget.Limits,
        refresh refreshConfig: RefreshConfig = RefreshConfig()
    ) {
        lifecycle = LifecycleMachine(config: config)
        journalBudget = JournalBudget(limits: journal)
        denialBudget = DenialBudget(limits: denial)
        refresh = RefreshMachine(config: refreshConfig)
    }

    /// The journal budget's limits in force.
    public var journalLimits: JournalBudget.Limits { journalBudget.limits }
    /// The denial budget's limits in force.
    public var denialLimits: DenialBudget.Limits { denialBudget.limits }

    /// Connections paused since start (Stats' `connectionsPaused`).
    public var pauses: Int { denialBudget.pauses }

    /// The journal budget's next deadline (its interval's end, when it has summaries to journal).
    public var journalDeadline: Instant? { journalBudget.nextDeadline }

    /// The earliest deadline of every part: arm the one monotonic timer for it and feed
    /// ``CoreInput/deadlineReached``. Mutating so that a shell keeping the core in a class reads it in
    /// place (no copy of the machine per call); changes nothing.
    public mutating func peekNextDeadline() -> Instant? {
        if reviewDue { return clocks.monotonic }
        return Self.earliest(
            Self.earliest(Self.earliest(lifecycle.peekNextDeadline(), journalBudget.nextDeadline), denialBudget.nextDeadline),
            nextFreezeCheck)
    }

    /// The earliest deadline on the wall clock (the refresh machine's, SPEC §6): arm the one wall-clock
    /// timer for it and feed ``CoreInput/wallDeadlineReached``.
    public var nextWallDeadline: RealtimeInstant? { refresh.nextWallDeadline }

    /// Whether `caller` may make an App call for `app` (a query, no input: the refusal itself is fed as
    /// ``Input/appCallReceived(_:method:caller:)``).
    public mutating func allowsAppCall(_ app: AppID, caller: Caller) -> Bool {
        lifecycle.allowsAppCall(app, caller: caller)
    }

    /// Applies one input at `now` (the wall clock then: the wall clock of the previous input moved on by as
    /// much as the monotonic one) and returns what the shell must do, in order.
    public mutating func handle(_ input: CoreInput, now: Instant) -> [CoreAction] {
        let wall = RealtimeInstant(
            microsecondsSinceEpoch: clocks.wall.microsecondsSinceEpoch + (now.microseconds - clocks.monotonic.microseconds))
        return handle(input, now: now, wall: wall)
    }

    /// Applies one input at `now`, `wall` on the wall clock (both read together), and returns what the shell
    /// must do, in order.
    public mutating func handle(_ input: CoreInput, now: Instant, wall: RealtimeInstant) -> [CoreAction] {
        out = []
        out.reserveCapacity(4)  // as LifecycleMachine.handle: one allocation per input, not one per append
        clocks = RefreshNow(wall: wall, monotonic: now)
        switch input {
        case .lifecycle(let input, let request, let origin):
            switch input {
            case .freezeConfirmed(let app), .freezeStalled(let app, _), .freezeFailed(let app, _):
                freezesAwaited[app] = nil
                ownFreezes[app] = nil
            default: break
            }
            launchCall = LaunchCall(input, request)
            for action in lifecycle.handle(input, now: now, request: request) {
                take(action, from: origin, now: now)
            }
            launchCall = nil
            spawnAnswered(input)
        case .refresh(let input, let request, let origin):
            takeRefresh(input, call: RefreshCall(request: request, origin: origin, payload: nil))
        case .remoteNotificationRequested(let app, let payload, let request, let origin):
            takeRefresh(.remoteNotificationRequested(app), call: RefreshCall(request: request, origin: origin, payload: payload))
        case .wallDeadlineReached:
            takeRefresh(.wallDeadlineReached, call: nil)
        case .decisionTaken(let d, let origin):
            take(.record(d), from: origin, now: now)
        case .deadlineReached:
            freezeChecksDue(now: now)
            let ended = journalBudget.deadlineReached(now: now)
            if !ended.isEmpty { summarise(ended) }
            if denialBudget.deadlineReached(now: now) { out.append(.releasePausedConnections) }
            for action in lifecycle.handle(.deadlineReached, now: now) { take(action, from: nil, now: now) }
        case .budgetsConfigured(let journal, let denial):
            journalBudget.limits = journal
            denialBudget.limits = denial
        case .stopping:
            let ended = journalBudget.closeWindow(now: now)
            if !ended.isEmpty { summarise(ended) }
        case .freezeStarted(let app, let parts, let own):
            freezesAwaited[app] = parts
            freezerAnswered(app, own, now: now)
        case .freezePartDone(let app):
            partDone(app, now: now)
        case .freezeChecked(let app, let fact):
            freezeChecked(app, fact, now: now)
        }
        settleRefresh()
        let actions = out
        out = []
        return actions
    }

    /// One part of the app's freeze under way is done: the freeze is confirmed once every part is.
    mutating func partDone(_ app: AppID, now: Instant) {
        guard let left = freezesAwaited[app] else { return }
        if left > 1 {
            freezesAwaited[app] = left - 1
            return
        }
        freezesAwaited[app] = nil
        feedLifecycle(.freezeConfirmed(app), now: now)
    }

    /// A fact the composite feeds the lifecycle machine itself (no call's, or the call `request` names for
    /// an input the refresh machine asked for); its actions are taken.
    mutating func feedLifecycle(_ input: Input, now: Instant, request: RequestID? = nil, from origin: CallOrigin? = nil) {
        for action in lifecycle.handle(input, now: now, request: request) { take(action, from: origin, now: now) }
    }

    /// One lifecycle action: its entry's fate (the journal budget), then the action, then, for a refusal of
    /// a call, the denial budget's verdict on the caller.
    mutating func take(_ action: Action, from origin: CallOrigin?, now: Instant) {
        switch action {
        case .freeze(let app, let processes, let held):
            // A new freeze counts its parts afresh.
            freezesAwaited[app] = nil
            freezeAsked(app, processes, held, now: now)
        case .thaw(let app, _, _), .kill(let app, _, _), .release(let app):
            // A thaw, kill or release calls the freeze under way off.
            freezesAwaited[app] = nil
            ownFreezes[app] = nil
        case .launch(let app, _, _):
            launchCall?.started(app)
        case .reply(let reply, let id?):
            // A reply that waits: for the spawn (Launch, Foreground), for the refresh state (RunTaskNow).
            if let waiting = replyWaits(reply, to: id) { return out.append(waiting) }
        case .taskStarted(let app, let identifier):
            refreshInbox.append(.taskStarted(app, identifier: identifier))
        default:
            break
        }
        guard let d = action.decision else {
            out.append(.perform(action, journaled: true, peer: origin?.caller))
            return
        }
        observe(d)
        var journaled = true
        if JournalBudget.isBudgeted(d.kind) {
            let (verdict, ended) = journalBudget.admit(d.kind, app: d.app, now: now)
            if !ended.isEmpty { summarise(ended) }
            journaled = verdict == .journal
            if !journaled { coalesced += 1 }
        }
        out.append(.perform(action, journaled: journaled, peer: origin?.caller))
        // A refusal journaled for a caller counts for it (issue 11: one client looping a refused call is
        // slowed, not the journal flooded).
        guard d.kind == .deny, let origin else { return }
        let (verdict, released) = denialBudget.denied(origin.caller, now: now)
        if released { out.append(.releasePausedConnections) }
        if case .pause(let pause) = verdict { out.append(.pauseConnection(origin, pause)) }
    }

    private mutating func summarise(_ ended: [JournalBudget.Summary]) {
        summaries += ended.count
        out.append(.journalSummaries(ended))
    }

    private static func earliest(_ a: Instant?, _ b: Instant?) -> Instant? {
        guard let a else { return b }
        guard let b else { return a }
        return min(a, b)
    }
}
