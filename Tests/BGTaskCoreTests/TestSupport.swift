import BGTaskCore
import Testing

// Fixed identifiers: literals known to be valid, so the force unwrap cannot fail.
let mail = AppID("org.example.Mail")!
let music = AppID("org.example.Music")!
let terminal = AppID("org.example.Terminal")!

let connA = ConnectionID(1)
let connB = ConnectionID(2)
let connC = ConnectionID(3)

extension TimeSpan {
    static let oneMicrosecond = TimeSpan.microseconds(1)
}

/// Drives a machine with time stepped by hand, keeping every action it returned.
struct Harness {
    static let standardManifests = [
        AppManifest(id: mail),
        AppManifest(id: music, backgroundModes: [.audio, .location, .fetch, .processing, .remoteNotification]),
        AppManifest(id: terminal, lifecycleAware: false),
    ]

    var machine: LifecycleMachine
    private(set) var now: Instant = .zero
    private(set) var log: [Action] = []

    init(config: LifecycleConfig = .default, manifests: [AppManifest] = Harness.standardManifests) {
        machine = LifecycleMachine(config: config)
        for manifest in manifests { _ = machine.handle(.appRegistered(manifest), now: .zero) }
    }

    /// Whether every freeze is reported done at once (``Input/freezeConfirmed(_:)`` right after the
    /// `.freeze`, as a shell does whose freezer finds it done on the first look); false: tests confirm.
    var confirmFreezes = true

    /// Feeds `input` at the current instant (and the confirmation of each freeze it causes, see
    /// `confirmFreezes`).
    /// What the shell answers to ``Action/observeLocks(_:_:)`` for each app (SPEC §14; default: no lock).
    /// `answerLockChecks` false: tests answer.
    var locks: [AppID: LockObservation] = [:]
    var answerLockChecks = true

    @discardableResult
    mutating func send(_ input: Input) -> [Action] {
        var actions: [Action] = []
        var inputs = [input]
        while !inputs.isEmpty {
            let out = machine.handle(inputs.removeFirst(), now: now)
            actions += out
            for action in out {
                switch action {
                case .freeze(let app, _, _) where confirmFreezes: inputs.append(.freezeConfirmed(app))
                case .observeLocks(let app, _) where answerLockChecks:
                    inputs.append(.locksObserved(app, locks[app] ?? LockObservation()))
                default: break
                }
            }
        }
        log += actions
        return actions
    }

    /// Moves the clock to `instant` and feeds `input` there.
    @discardableResult
    mutating func at(_ instant: Instant, _ input: Input = .deadlineReached) -> [Action] {
        now = instant
        return send(input)
    }

    /// Moves the clock on by `span` and feeds `input`.
    @discardableResult
    mutating func after(_ span: TimeSpan, _ input: Input = .deadlineReached) -> [Action] {
        at(now + span, input)
    }

    func snapshot(_ app: AppID) -> AppSnapshot? { machine.app(app, now: now) }
    func state(_ app: AppID) -> AppState? { snapshot(app)?.state }

    /// Launches `app` into the foreground (sequence 1) and checks it in on `connection`.
    @discardableResult
    mutating func launchActive(_ app: AppID, connection: ConnectionID = connA, pid: Int32 = 100) -> [Action] {
        var actions = send(.launchRequested(app, background: false, exclusive: false))
        actions += send(.appLaunched(app, pid: pid))
        actions += send(.appCheckedIn(app, connection: connection, pid: pid))
        return actions
    }

    /// Sends an active app to the background and returns the `did-enter-background` to acknowledge.
    mutating func background(_ app: AppID) -> Event? {
        send(.backgroundRequested(app)).events.first { $0.kind == .didEnterBackground }
    }

    /// Begins an assertion and returns its identifier (``TaskID/invalid`` if denied).
    mutating func begin(_ app: AppID, on connection: ConnectionID = connA, name: String? = nil) -> TaskID {
        for action in send(.assertionRequested(app, connection: connection, name: name)) {
            if case .reply(.taskID(let task), _) = action { return task }
        }
        return .invalid
    }
}

extension Array where Element == Action {
    var events: [Event] {
        compactMap { action in
            if case .deliver(_, _, let event) = action { return event }
            return nil
        }
    }
    func events(for app: AppID) -> [Event] {
        compactMap { action in
            if case .deliver(app, _, let event) = action { return event }
            return nil
        }
    }
    /// Kind and state of every delivered event, in order.
    var sequence: [Step] { events.map { Step($0.kind, $0.state) } }
    var decisions: [Decision] { compactMap(\.decision) }
    var replies: [Reply] {
        compactMap { action in
            if case .reply(let reply, _) = action { return reply }
            return nil
        }
    }
    var freezes: [AppID] { compactMap { if case .freeze(let app, _, _) = $0 { return app } else { return nil } } }
    var thaws: [AppID] { compactMap { if case .thaw(let app, _, _) = $0 { return app } else { return nil } } }
    var sigterms: [AppID] { compactMap { if case .terminate(let app, _, _) = $0 { return app } else { return nil } } }
    var kills: [AppID] { compactMap { if case .kill(let app, _, _) = $0 { return app } else { return nil } } }
    var launches: [AppID] { compactMap { if case .launch(let app, _, _) = $0 { return app } else { return nil } } }
    func decisions(_ kind: DecisionKind) -> [Decision] { decisions.filter { $0.kind == kind } }
}

/// An event's kind and the state it announces.
struct Step: Equatable, CustomStringConvertible {
    var kind: LifecycleEventKind
    var state: AppState
    init(_ kind: LifecycleEventKind, _ state: AppState) {
        self.kind = kind
        self.state = state
    }
    var description: String { "\(kind.rawValue)→\(state.rawValue)" }
}
