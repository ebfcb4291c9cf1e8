public import BGTaskProtocol
@_exported public import BGTaskModel

/// An identifier for a background task (UIKit's `UIBackgroundTaskIdentifier`). ``invalid`` means denied.
public struct BackgroundTaskIdentifier: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The daemon's `taskId`.
    public let rawValue: Int
    /// Wraps a `taskId`.
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// The identifier returned when a task was not granted (`taskId` 0).
    public static let invalid = BackgroundTaskIdentifier(rawValue: 0)
    public var description: String { String(rawValue) }
}

// The product's vocabulary (SPEC names) comes from BGTaskModel, shared with the daemon and bgtaskctl;
// the names this library documented before stay as aliases.

/// Whether the system may launch or wake the app in the background (UIKit's `UIBackgroundRefreshStatus`):
/// `restricted` (the administrator restricted it, `RefreshRestricted=yes`), `denied` (off for this app, off
/// globally, or Low Power Mode is on) or `available`.
public typealias BackgroundRefreshStatus = RefreshStatus

/// An app's state as the daemon sees it (SPEC §2): `notRunning`, `inactive`, `active`, `background`,
/// `suspended` (never observed by running code).
public typealias BGLifecycleState = AppState

/// One event of the `CheckIn` stream (`type Event` of `io.bgtaskd.App`).
///
/// Delegates rarely need it: ``BGApplication`` turns each kind into its delegate method. It is handed
/// whole to ``BGApplicationDelegate/application(_:didReceive:)`` for logging and tools.
public struct BGApplicationEvent: Sendable, Equatable {
    /// An event kind (the wire string). Unknown kinds from a newer daemon are kept, not rejected.
    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The wire name.
        public let rawValue: String
        /// A kind by its wire name.
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The app checked in after a launch (carries `launchReason`).
        public static let didFinishLaunching = Kind(rawValue: "did-finish-launching")
        /// The app is about to come to the foreground.
        public static let willEnterForeground = Kind(rawValue: "will-enter-foreground")
        /// The app is active.
        public static let didBecomeActive = Kind(rawValue: "did-become-active")
        /// The app is about to lose the focus.
        public static let willResignActive = Kind(rawValue: "will-resign-active")
        /// The app is in the background; needs an acknowledgement.
        public static let didEnterBackground = Kind(rawValue: "did-enter-background")
        /// A background task (`taskId`) or a scheduled task (`identifier`) is about to run out of time.
        public static let backgroundTaskWillExpire = Kind(rawValue: "background-task-will-expire")
        /// The app is being terminated.
        public static let willTerminate = Kind(rawValue: "will-terminate")
        /// Run the scheduled task `identifier`, then complete it.
        public static let performTask = Kind(rawValue: "perform-task")
        /// A notification (`name`, `payload`).
        public static let notification = Kind(rawValue: "notification")
        /// The system is short of memory.
        public static let memoryWarning = Kind(rawValue: "memory-warning")

        /// The kinds SPEC §2 defines.
        public static let all: [Kind] = [
            .didFinishLaunching, .willEnterForeground, .didBecomeActive, .willResignActive, .didEnterBackground,
            .backgroundTaskWillExpire, .willTerminate, .performTask, .notification, .memoryWarning,
        ]
    }

    /// The event's number: the argument of `Acknowledge` when ``needsAck``.
    public var id: Int64
    /// What happened.
    public var kind: Kind
    /// The app's state once the event is delivered (nil if the daemon sent a state this library does not know).
    public var state: BGLifecycleState?
    /// Whether the event must be acknowledged (`did-enter-background`, a remote-notification wake).
    public var needsAck: Bool
    /// The background task a `background-task-will-expire` is about.
    public var taskID: BackgroundTaskIdentifier?
    /// That background task's name.
    public var taskName: String?
    /// The scheduled task's identifier (`perform-task` and its `background-task-will-expire`).
    public var identifier: String?
    /// The notification's name.
    public var name: String?
    /// The notification's payload (a JSON object).
    public var payload: JSON?
    /// Why the app was launched (`did-finish-launching`).
    public var launchReason: LaunchReason?
    /// When the time that goes with the event runs out, CLOCK_MONOTONIC microseconds.
    public var deadlineUSec: Int64?
    /// SPEC §15: the scene of a scene event (its ID, title, display), and where `scene-snapshot` wants the PNG.
    public var sceneID: String? = nil
    public var title: String? = nil
    public var output: String? = nil
    public var path: String? = nil

    /// An event; optional fields default to nil.
    public init(
        id: Int64, kind: Kind, state: BGLifecycleState?, needsAck: Bool = false,
        taskID: BackgroundTaskIdentifier? = nil, taskName: String? = nil, identifier: String? = nil,
        name: String? = nil, payload: JSON? = nil, launchReason: LaunchReason? = nil, deadlineUSec: Int64? = nil
    ) {
        self.id = id
        self.kind = kind
        self.state = state
        self.needsAck = needsAck
        self.taskID = taskID
        self.taskName = taskName
        self.identifier = identifier
        self.name = name
        self.payload = payload
        self.launchReason = launchReason
        self.deadlineUSec = deadlineUSec
    }

    /// Reads an `Event` object through the contract's `AppWire.Event`. `id` and `kind` are required; a state,
    /// kind or launch reason this build does not know does not fail it (a kind is kept as sent, unknown
    /// state and launch reason are dropped).
    public init(json: JSON) throws(BGTaskClientError) {
        guard case .object(let o) = json else { throw .invalidReply("event is not an object") }
        let wire: AppWire.Event
        do { wire = try AppWire.Event(json: o) } catch { throw .invalidReply("event with an invalid \(error.field)") }
        try self.init(wire: wire)
    }

    init(wire: AppWire.Event) throws(BGTaskClientError) {
        guard !wire.kind.rawValue.isEmpty else { throw .invalidReply("event without a kind") }
        self.init(
            id: Int64(clamping: wire.id.rawValue), kind: Kind(rawValue: wire.kind.rawValue), state: wire.state?.known, needsAck: wire.needsAck,
            taskID: wire.taskId.flatMap { Int(exactly: $0.rawValue) }.map(BackgroundTaskIdentifier.init(rawValue:)),
            taskName: wire.taskName, identifier: wire.identifier, name: wire.name, payload: wire.payload,
            launchReason: wire.launchReason?.known, deadlineUSec: wire.deadlineUSec)
        sceneID = wire.sceneId
        title = wire.title
        output = wire.output
        path = wire.path
    }

    /// The event as a wire `Event` object (absent optionals left out).
    public var json: JSON {
        var o: [String: JSON] = ["id": .int(id), "kind": .string(kind.rawValue), "needsAck": .bool(needsAck)]
        if let state { o["state"] = .string(state.rawValue) }
        if let taskID { o["taskId"] = .int(Int64(taskID.rawValue)) }
        if let taskName { o["taskName"] = .string(taskName) }
        if let identifier { o["identifier"] = .string(identifier) }
        if let name { o["name"] = .string(name) }
        if let payload { o["payload"] = payload }
        if let launchReason { o["launchReason"] = .string(launchReason.rawValue) }
        if let deadlineUSec { o["deadlineUSec"] = .int(deadlineUSec) }
        if let sceneID { o["sceneId"] = .string(sceneID) }
        if let title { o["title"] = .string(title) }
        if let output { o["output"] = .string(output) }
        if let path { o["path"] = .string(path) }
        return .object(o)
    }
}

/// One reply of the `CheckIn` stream: the app's state and refresh status, and at most one event.
struct CheckInReply: Sendable, Equatable {
    var state: BGLifecycleState?
    var refreshStatus: BackgroundRefreshStatus?
    var event: BGApplicationEvent?

    init(state: BGLifecycleState?, refreshStatus: BackgroundRefreshStatus?, event: BGApplicationEvent? = nil) {
        self.state = state
        self.refreshStatus = refreshStatus
        self.event = event
    }

    /// Reads a reply through the contract's `AppWire.CheckInReply`; values this build does not know are nil.
    init(parameters p: [String: JSON]) throws(BGTaskClientError) {
        let wire: AppWire.CheckInReply
        do {
            wire = try AppWire.CheckInReply(json: p)
        } catch {
            // The event's own sentence says what is wrong with it.
            if let e = p[AppWire.CheckInReply.fields[2]], error.field == AppWire.CheckInReply.fields[2] {
                _ = try BGApplicationEvent(json: e)
            }
            throw .invalidReply("CheckIn answered with an invalid \(error.field)")
        }
        state = wire.state?.known
        refreshStatus = wire.refreshStatus?.known
        event = try wire.event.map { e throws(BGTaskClientError) in try BGApplicationEvent(wire: e) }
    }
}

/// What the library knows of the app's state, updated by each reply of the stream in order.
struct LifecycleTracker: Sendable, Equatable {
    /// UIKit's view: what ``BGApplication/applicationState`` returns.
    var applicationState: BGApplication.State = .background
    /// The daemon's view.
    var lifecycleState: BGLifecycleState?
    var refreshStatus: BackgroundRefreshStatus?

    /// The event's `state` wins (the daemon knows best); then the reply's; when neither is a state the
    /// library knows, the kind decides (and events that do not change the state keep it).
    mutating func apply(_ reply: CheckInReply) {
        if let status = reply.refreshStatus { refreshStatus = status }
        let wire = reply.event?.state ?? reply.state
        if let wire { lifecycleState = wire }
        if let wire, let mapped = BGApplication.State(wire) {
            applicationState = mapped
        } else if let event = reply.event, let implied = BGApplication.State.implied(by: event) {
            applicationState = implied
        }
    }
}

extension BGApplication.State {
    /// UIKit's state for a daemon state; nil for `not-running`, which a running process never is.
    init?(_ state: BGLifecycleState) {
        switch state {
        case .active: self = .active
        case .inactive: self = .inactive
        case .background, .suspended: self = .background
        case .notRunning: return nil
        }
    }

    /// The state SPEC §2 implies after an event of this kind, when the event does not say.
    static func implied(by event: BGApplicationEvent) -> BGApplication.State? {
        switch event.kind {
        case .didFinishLaunching:
            return (event.launchReason ?? .user) == .user ? .inactive : .background
        case .willEnterForeground, .willResignActive: return .inactive
        case .didBecomeActive: return .active
        case .didEnterBackground: return .background
        default: return nil
        }
    }
}

/// Seconds left from a `BackgroundTimeRemaining` reply: absent or null (foreground) is unlimited,
/// which is `Double.greatestFiniteMagnitude` as in UIKit.
func secondsRemaining(fromUSec value: Int64?) -> Double {
    guard let usec = value else { return .greatestFiniteMagnitude }
    return Double(max(0, usec)) / 1_000_000
}
