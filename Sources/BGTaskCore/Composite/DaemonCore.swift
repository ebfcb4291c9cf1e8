/// The daemon's one core: the lifecycle machine, the journal budget and the denial budget behind one
/// ``CoreInput``, one ``CoreAction`` and one monotonic deadline (as async-http-client's
/// `HTTPConnectionPool.StateMachine` wraps its HTTP/1 and HTTP/2 machines). The shell never merges the
/// machines' deadlines nor feeds one machine's output to another: this does.
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

    /// A core with no apps, with the lifecycle configuration and the budgets' limits of the first load.
    public init(lifecycle config: LifecycleConfig, journal: JournalBudget.Limits, denial: DenialBudget.Limits) {
        lifecycle = LifecycleMachine(config: config)
        journalBudget = JournalBudget(limits: journal)
        denialBudget = DenialBudget(limits: denial)
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
        Self.earliest(
            Self.earliest(Self.earliest(lifecycle.peekNextDeadline(), journalBudget.nextDeadline), denialBudget.nextDeadline),
            nextFreezeCheck)
    }

    /// Whether `caller` may make an App call for `app` (a query, no input: the refusal itself is fed as
    /// ``Input/appCallReceived(_:method:caller:)``).
    public mutating func allowsAppCall(_ app: AppID, caller: Caller) -> Bool {
        lifecycle.allowsAppCall(app, caller: caller)
    }

    /// Applies one input at `now` and returns what the shell must do, in order.
    public mutating func handle(_ input: CoreInput, now: Instant) -> [CoreAction] {
        out = []
        switch input {
        case .lifecycle(let input, let request, let origin):
            switch input {
            case .freezeConfirmed(let app), .freezeStalled(let app, _), .freezeFailed(let app, _):
                freezesAwaited[app] = nil
                ownFreezes[app] = nil
            default: break
            }
            for action in lifecycle.handle(input, now: now, request: request) {
                take(action, from: origin, now: now)
            }
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

    /// A fact the composite feeds the lifecycle machine itself (no call's); its actions are taken.
    mutating func feedLifecycle(_ input: Input, now: Instant) {
        for action in lifecycle.handle(input, now: now) { take(action, from: nil, now: now) }
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
        default:
            break
        }
        guard let d = action.decision else {
            out.append(.perform(action, journaled: true, peer: origin?.caller))
            return
        }
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
