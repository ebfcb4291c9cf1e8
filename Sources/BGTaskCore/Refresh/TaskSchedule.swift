/// A pending scheduled task request (BGTaskRequest; `type TaskRequest` on the wire, SPEC §6).
public struct TaskRequest: Hashable, Sendable, Codable {
    /// One of the manifest's `PermittedTaskIdentifiers=`.
    public var identifier: String
    /// Refresh or processing.
    public var kind: TaskKind
    /// Not before this wall-clock instant (`earliestBeginUSec`); `nil`: as soon as possible.
    public var earliestBegin: RealtimeInstant?
    /// Waits while the network is `none`.
    public var requiresNetwork: Bool
    /// Waits while the device is on battery.
    public var requiresExternalPower: Bool

    /// A request; no date and no condition unless told otherwise.
    public init(
        identifier: String, kind: TaskKind, earliestBegin: RealtimeInstant? = nil, requiresNetwork: Bool = false,
        requiresExternalPower: Bool = false
    ) {
        self.identifier = identifier
        self.kind = kind
        self.earliestBegin = earliestBegin
        self.requiresNetwork = requiresNetwork
        self.requiresExternalPower = requiresExternalPower
    }
}

/// Why `SubmitTaskRequest` was refused (BGTaskScheduler.Error). The shell names them on the wire.
public enum TaskSubmitError: Error, Hashable, Sendable {
    /// The identifier is not in `PermittedTaskIdentifiers=` (`NotPermitted`).
    case notPermitted(String)
    /// Refresh needs `fetch`, processing needs `processing` in `BackgroundModes=` (`ModeNotDeclared`).
    case modeNotDeclared(BackgroundMode)
    /// The app's refresh is not available (`Unavailable`, with the denial reason).
    case unavailable(Reason)
    /// Already 1 pending refresh or 10 pending processing requests (`TooManyPendingTaskRequests`).
    case tooManyPendingTaskRequests(TaskKind)
}

/// What the app's manifest and policy allow, as `submit` needs it.
public struct TaskSubmitPermissions: Hashable, Sendable {
    /// `PermittedTaskIdentifiers=`.
    public var permittedIdentifiers: Set<String>
    /// `BackgroundModes=`.
    public var backgroundModes: Set<BackgroundMode>
    /// Why refresh is not available (``RefreshPolicy/status(enabled:restricted:)`` not `available`); `nil`: it is.
    public var unavailable: Reason?

    /// Permissions for one submission.
    public init(permittedIdentifiers: Set<String>, backgroundModes: Set<BackgroundMode>, unavailable: Reason? = nil) {
        self.permittedIdentifiers = permittedIdentifiers
        self.backgroundModes = backgroundModes
        self.unavailable = unavailable
    }
}

/// Why a pending request waits (it is not denied: it runs once the wait is over).
public enum TaskWait: Hashable, Sendable {
    /// Its earliest begin date has not passed.
    case earliestBegin(RealtimeInstant)
    /// The app's last refresh was less than `MinimumRefreshIntervalSec` ago: not before this instant.
    case minimumInterval(RealtimeInstant)
    /// A processing task waits for `ProcessingIdleSec` without a foreground app: until this instant,
    /// or `nil` while an app is in the foreground.
    case idle(RealtimeInstant?)
    /// It requires a network and there is none.
    case network
    /// It requires external power and the device is on battery.
    case externalPower

    /// The instant at which the wait may be over by itself; `nil`: only a change of conditions or of
    /// the apps' states ends it.
    public var until: RealtimeInstant? {
        switch self {
        case .earliestBegin(let t), .minimumInterval(let t): return t
        case .idle(let t): return t
        case .network, .externalPower: return nil
        }
    }
}

/// What to do with a pending request now.
public enum TaskVerdict: Hashable, Sendable {
    /// Launch or resume the app and deliver `perform-task`.
    case run
    /// Not yet.
    case wait(TaskWait)
    /// Due, but the refresh policy forbids it (`deny` with this reason: `restricted`, `refresh-disabled`,
    /// `low-power-mode`, `network-metered`).
    case deny(Reason)
}

/// Everything time- and device-dependent a scheduling decision needs. The shell reads the clocks.
public struct TaskSchedulingContext: Hashable, Sendable {
    /// The wall clock now.
    public var now: RealtimeInstant
    /// Power and network.
    public var conditions: RefreshConditions
    /// `MinimumRefreshIntervalSec`.
    public var minimumRefreshInterval: TimeSpan
    /// `ProcessingIdleSec`.
    public var processingIdle: TimeSpan
    /// How long no app has been in the foreground (monotonic); `nil` while one is.
    public var idleFor: TimeSpan?

    /// A context.
    public init(
        now: RealtimeInstant, conditions: RefreshConditions = RefreshConditions(),
        minimumRefreshInterval: TimeSpan = .minutes(15), processingIdle: TimeSpan = .seconds(60), idleFor: TimeSpan? = nil
    ) {
        self.now = now
        self.conditions = conditions
        self.minimumRefreshInterval = minimumRefreshInterval
        self.processingIdle = processingIdle
        self.idleFor = idleFor
    }
}

/// One request the plan says to run, or to deny.
public struct PlannedTask: Hashable, Sendable {
    /// The app.
    public var app: AppID
    /// The request.
    public var request: TaskRequest

    /// A planned task.
    public init(app: AppID, request: TaskRequest) {
        self.app = app
        self.request = request
    }
}

/// A due request the policy denies, and why.
public struct PlannedDenial: Hashable, Sendable {
    /// The app and request.
    public var task: PlannedTask
    /// `restricted`, `refresh-disabled`, `low-power-mode` or `network-metered`.
    public var reason: Reason

    /// A planned denial.
    public init(task: PlannedTask, reason: Reason) {
        self.task = task
        self.reason = reason
    }
}

/// The result of ``TaskSchedule/plan(context:denial:)``: what to run now, what is due but denied, and when
/// to look again.
public struct TaskPlan: Hashable, Sendable {
    /// Requests to run now, apps in identifier order, each app's requests in submission order.
    public var runs: [PlannedTask] = []
    /// Requests that are due but denied by the policy.
    public var denials: [PlannedDenial] = []
    /// The earliest instant at which a waiting request may become due by itself (arm one timer for it).
    public var nextWake: RealtimeInstant?
    /// Some request waits for no app to be in the foreground: look again when apps change state.
    public var waitsForIdle = false

    /// An empty plan.
    public init() {}
}

/// The pending task requests of every app and each app's last refresh (SPEC §6). Pure: submissions are
/// validated against what the shell passes in, and ``plan(context:denial:)`` decides with the time given.
///
/// Limits: at most ``maxPendingRefreshRequests`` refresh and ``maxPendingProcessingRequests`` processing
/// requests per app; resubmitting an identifier replaces its pending request (in place).
public struct TaskSchedule: Hashable, Sendable, Codable {
    /// Pending refresh requests per app (BGTaskScheduler: 1).
    public static let maxPendingRefreshRequests = 1
    /// Pending processing requests per app (BGTaskScheduler: 10).
    public static let maxPendingProcessingRequests = 10

    /// Pending requests per app, in submission order. Apps without requests have no entry.
    public private(set) var pending: [AppID: [TaskRequest]] = [:]
    /// When each app was last woken for a refresh task (wall clock).
    public private(set) var lastRefresh: [AppID: RealtimeInstant] = [:]

    /// An empty schedule.
    public init() {}

    /// The app's pending requests, in submission order.
    public func requests(for app: AppID) -> [TaskRequest] { pending[app] ?? [] }

    /// The number of the app's pending requests.
    public func count(for app: AppID) -> Int { pending[app]?.count ?? 0 }

    /// Every app with pending requests, sorted.
    public var apps: [AppID] { pending.keys.sorted() }

    /// `SubmitTaskRequest`: validates and stores `request`. Returns the request it replaced, if any.
    ///
    /// Checks in this order: permitted identifier, declared mode, refresh available, limits (not counting
    /// the request being replaced).
    @discardableResult
    public mutating func submit(
        _ request: TaskRequest, for app: AppID, permissions: TaskSubmitPermissions
    ) -> Result<TaskRequest?, TaskSubmitError> {
        guard permissions.permittedIdentifiers.contains(request.identifier) else {
            return .failure(.notPermitted(request.identifier))
        }
        let mode: BackgroundMode = request.kind == .refresh ? .fetch : .processing
        guard permissions.backgroundModes.contains(mode) else { return .failure(.modeNotDeclared(mode)) }
        if let reason = permissions.unavailable { return .failure(.unavailable(reason)) }
        var list = pending[app] ?? []
        let existing = list.firstIndex { $0.identifier == request.identifier }
        let sameKind = list.enumerated().filter { $0.offset != existing && $0.element.kind == request.kind }.count
        let limit = request.kind == .refresh ? Self.maxPendingRefreshRequests : Self.maxPendingProcessingRequests
        guard sameKind < limit else { return .failure(.tooManyPendingTaskRequests(request.kind)) }
        if let existing {
            let replaced = list[existing]
            list[existing] = request
            pending[app] = list
            return .success(replaced)
        }
        list.append(request)
        pending[app] = list
        return .success(nil)
    }

    /// Puts a request back as it was (loading saved state): no validation beyond the limits, which drop
    /// the excess. Returns whether it was kept.
    @discardableResult
    public mutating func restore(_ request: TaskRequest, for app: AppID) -> Bool {
        var list = pending[app] ?? []
        if let i = list.firstIndex(where: { $0.identifier == request.identifier }) {
            list[i] = request
        } else {
            let limit = request.kind == .refresh ? Self.maxPendingRefreshRequests : Self.maxPendingProcessingRequests
            guard list.filter({ $0.kind == request.kind }).count < limit else { return false }
            list.append(request)
        }
        pending[app] = list
        return true
    }

    /// `CancelTaskRequest`: removes the request; returns it (`nil`: there was none, which is harmless).
    @discardableResult
    public mutating func cancel(_ identifier: String, for app: AppID) -> TaskRequest? {
        guard var list = pending[app], let i = list.firstIndex(where: { $0.identifier == identifier }) else { return nil }
        let removed = list.remove(at: i)
        pending[app] = list.isEmpty ? nil : list
        return removed
    }

    /// `CancelAllTaskRequests`: removes every request of the app; returns how many there were.
    @discardableResult
    public mutating func cancelAll(for app: AppID) -> Int {
        pending.removeValue(forKey: app)?.count ?? 0
    }

    /// The request is being run: it leaves the schedule (the app submits again for a next run), and a
    /// refresh becomes the app's last refresh.
    @discardableResult
    public mutating func started(_ identifier: String, for app: AppID, at now: RealtimeInstant) -> TaskRequest? {
        let removed = cancel(identifier, for: app)
        if removed?.kind == .refresh { lastRefresh[app] = now }
        return removed
    }

    /// Sets the app's last refresh (loading saved state).
    public mutating func setLastRefresh(_ instant: RealtimeInstant?, for app: AppID) {
        lastRefresh[app] = instant
    }

    /// What to do with one request now. The checks run in this order: the earliest begin date, the policy
    /// (`denial`, from ``RefreshPolicy/denial(enabled:restricted:)``), network, external power, then for a
    /// refresh the minimum interval since `lastRefresh`, for a processing task the idle rule.
    ///
    /// A `lastRefresh` later than `now` (the wall clock went back) is ignored.
    public static func verdict(
        for request: TaskRequest, denial: Reason?, lastRefresh: RealtimeInstant?, context: TaskSchedulingContext
    ) -> TaskVerdict {
        let now = context.now
        if let begin = request.earliestBegin, now < begin { return .wait(.earliestBegin(begin)) }
        if let denial { return .deny(denial) }
        if request.requiresNetwork && context.conditions.network == .none { return .wait(.network) }
        if request.requiresExternalPower && !context.conditions.onExternalPower { return .wait(.externalPower) }
        switch request.kind {
        case .refresh:
            if let last = lastRefresh, last <= now {
                let allowed = last + Swift.max(.zero, context.minimumRefreshInterval)
                if now < allowed { return .wait(.minimumInterval(allowed)) }
            }
        case .processing:
            guard let idle = context.idleFor else { return .wait(.idle(nil)) }
            let needed = Swift.max(.zero, context.processingIdle)
            if idle < needed { return .wait(.idle(now + (needed - idle))) }
        }
        return .run
    }

    /// Decides every pending request at `context.now`. `denial(app)` is the policy's answer for the app
    /// (`nil`: allowed). Deterministic: apps in identifier order, requests in submission order.
    public func plan(context: TaskSchedulingContext, denial: (AppID) -> Reason?) -> TaskPlan {
        var plan = TaskPlan()
        for app in apps {
            let deny = denial(app)
            let last = lastRefresh[app]
            for request in requests(for: app) {
                switch Self.verdict(for: request, denial: deny, lastRefresh: last, context: context) {
                case .run:
                    plan.runs.append(PlannedTask(app: app, request: request))
                case .deny(let reason):
                    plan.denials.append(PlannedDenial(task: PlannedTask(app: app, request: request), reason: reason))
                case .wait(let wait):
                    if case .idle = wait { plan.waitsForIdle = true }
                    if let until = wait.until { plan.nextWake = plan.nextWake.map { Swift.min($0, until) } ?? until }
                }
            }
        }
        return plan
    }
}
