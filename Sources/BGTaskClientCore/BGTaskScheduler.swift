import BGTaskProtocol
public import Dispatch
import Synchronization

/// A request to run a scheduled task later (Apple's `BGTaskRequest`). Submit a
/// ``BGAppRefreshTaskRequest`` or a ``BGProcessingTaskRequest``.
public class BGTaskRequest: CustomStringConvertible {
    /// The task's identifier; must be in the manifest's `PermittedTaskIdentifiers=`.
    public let identifier: String
    /// `earliestBeginDate` (module BGTaskClient, which adds Foundation's `Date`) in seconds since the epoch
    /// (wall clock). nil: as soon as the conditions allow. Kept without `Date` so that bgtaskctl and
    /// bgtaskd-focus, which link this module only, do not link FoundationEssentials (docs/performance.md row 8).
    package var earliestBeginSeconds: Double?
    /// `refresh` or `processing` on the wire.
    let kind: String

    init(identifier: String, kind: String) {
        self.identifier = identifier
        self.kind = kind
    }

    public var description: String {
        "\(kind) task request \(identifier)"
            + (earliestBeginSeconds.map { " not before \($0)" } ?? "")
    }

    /// The `SubmitTaskRequest` parameters; nil for a kind the daemon's vocabulary does not know.
    func parameters(appID: String) -> AppWire.SubmitTaskRequest? {
        guard let kind = TaskKind(rawValue: kind) else { return nil }
        var p = AppWire.SubmitTaskRequest(appId: appID, identifier: identifier, kind: kind)
        if let seconds = earliestBeginSeconds {
            let usec = (seconds * 1_000_000).rounded()
            if usec.isFinite { p.earliestBeginUSec = Int64(max(0, min(usec, 9.2e18))) }
        }
        return p
    }

    /// A request read from a `TaskRequest` object; nil for one that does not fit or a kind this library does
    /// not know.
    static func make(from json: JSON) -> BGTaskRequest? {
        guard let wire = try? AppWire.TaskRequest(value: json, field: "requests") else { return nil }
        return make(from: wire)
    }

    /// A request read from a `TaskRequest`; nil for a kind this library does not know.
    static func make(from wire: AppWire.TaskRequest) -> BGTaskRequest? {
        let request: BGTaskRequest
        switch wire.kind.known {
        case nil:
            return nil
        case .refresh?:
            request = BGAppRefreshTaskRequest(identifier: wire.identifier)
        case .processing?:
            let processing = BGProcessingTaskRequest(identifier: wire.identifier)
            processing.requiresNetworkConnectivity = wire.requiresNetwork
            processing.requiresExternalPower = wire.requiresExternalPower
            request = processing
        }
        if let usec = wire.earliestBeginUSec {
            request.earliestBeginSeconds = Double(usec) / 1_000_000
        }
        return request
    }
}

/// A short task to refresh the app's content (`RefreshTaskBudgetSec`, 30 s by default). Needs the
/// `fetch` background mode; one may be pending per app.
public final class BGAppRefreshTaskRequest: BGTaskRequest {
    /// A refresh request for `identifier`.
    public init(identifier: String) { super.init(identifier: identifier, kind: "refresh") }
}

/// A longer task (`ProcessingTaskBudgetSec`, 5 min by default) run when the device is idle. Needs the
/// `processing` background mode; ten may be pending per app.
public final class BGProcessingTaskRequest: BGTaskRequest {
    /// Run only with a network connection.
    public var requiresNetworkConnectivity = false
    /// Run only on external power.
    public var requiresExternalPower = false

    /// A processing request for `identifier`.
    public init(identifier: String) { super.init(identifier: identifier, kind: "processing") }

    override func parameters(appID: String) -> AppWire.SubmitTaskRequest? {
        var p = super.parameters(appID: appID)
        p?.requiresNetwork = requiresNetworkConnectivity
        p?.requiresExternalPower = requiresExternalPower
        return p
    }
}

/// A scheduled task being run (Apple's `BGTask`), handed to the launch handler.
///
/// Do the work, then call ``setTaskCompleted(success:)``. Shortly before its time runs out
/// ``expirationHandler`` runs: stop the work and complete the task, or the app is terminated.
public final class BGTask: Sendable, CustomStringConvertible {
    /// The identifier the task was submitted with.
    public let identifier: String
    let session: Int
    let queue: DispatchQueue
    private let scheduler: BGTaskScheduler
    private let state = Mutex<(handler: (@Sendable () -> Void)?, completed: Bool)>((nil, false))

    init(identifier: String, session: Int, queue: DispatchQueue, scheduler: BGTaskScheduler) {
        self.identifier = identifier
        self.session = session
        self.queue = queue
        self.scheduler = scheduler
    }

    /// Runs (on the launch handler's queue) when the task's time is about to run out.
    public var expirationHandler: (@Sendable () -> Void)? {
        get { state.withLock { $0.handler } }
        set { state.withLock { $0.handler = newValue } }
    }

    /// Reports the end of the work (`CompleteTask`); the app may then be suspended. Only the first call counts.
    public func setTaskCompleted(success: Bool) {
        let first = state.withLock { st in
            defer { st.completed = true }
            return !st.completed
        }
        if first { scheduler.complete(self, success: success) }
    }

    var isCompleted: Bool { state.withLock { $0.completed } }

    public var description: String { "BGTask(\(identifier))" }
}

/// The task Apple hands to a refresh launch handler; here every task is a ``BGTask``.
public typealias BGAppRefreshTask = BGTask
/// The task Apple hands to a processing launch handler; here every task is a ``BGTask``.
public typealias BGProcessingTask = BGTask

/// Schedules tasks that launch or wake the app in the background later (Apple's `BGTaskScheduler`).
///
/// Register a launch handler for each identifier before ``BGApplication/run()``, then submit requests:
/// ```swift
/// BGTaskScheduler.shared.register(forTaskWithIdentifier: "org.example.Mail.refresh", using: nil) { task in
///     task.expirationHandler = { sync.cancel() }
///     sync.start { ok in task.setTaskCompleted(success: ok) }
/// }
/// try BGTaskScheduler.shared.submit(BGAppRefreshTaskRequest(identifier: "org.example.Mail.refresh"))
/// ```
public final class BGTaskScheduler: Sendable {
    /// The scheduler of ``BGApplication/shared``.
    public static var shared: BGTaskScheduler { BGApplication.shared.taskScheduler }

    /// The app the scheduler submits for.
    public let appID: String
    private let calls: CallChannel
    private let sessions: SessionCounter

    private struct Registration {
        var queue: DispatchQueue?
        var handler: @Sendable (BGTask) -> Void
    }
    private struct State {
        var registrations: [String: Registration] = [:]
        var running: [String: BGTask] = [:]
    }
    private let state = Mutex(State())

    init(appID: String, calls: CallChannel, sessions: SessionCounter) {
        self.appID = appID
        self.calls = calls
        self.sessions = sessions
    }

    /// Registers the handler that runs a task when the daemon delivers `perform-task` for `identifier`.
    /// It runs on `queue`, or on the main queue when nil. Returns false if `identifier` already has one.
    @discardableResult
    public func register(
        forTaskWithIdentifier identifier: String, using queue: DispatchQueue? = nil,
        launchHandler: @escaping @Sendable (BGTask) -> Void
    ) -> Bool {
        state.withLock { st in
            guard st.registrations[identifier] == nil else { return false }
            st.registrations[identifier] = Registration(queue: queue, handler: launchHandler)
            return true
        }
    }

    /// Submits a request (`SubmitTaskRequest`), replacing a pending one with the same identifier.
    public func submit(_ taskRequest: BGTaskRequest) throws(BGTaskSchedulerError) {
        guard let parameters = taskRequest.parameters(appID: appID) else {
            throw BGTaskSchedulerError(.invalidParameter("kind"))
        }
        do {
            try calls.call(AppMethod.submitTaskRequest, parameters)
        } catch {
            throw BGTaskSchedulerError(error)
        }
    }

    /// Cancels the pending request for `identifier`, if any.
    public func cancel(taskRequestWithIdentifier identifier: String) {
        do {
            try calls.call(AppMethod.cancelTaskRequest, AppWire.CancelTaskRequest(appId: appID, identifier: identifier))
        } catch {
            diagnose("cancel(taskRequestWithIdentifier: \(identifier)) failed: \(error)")
        }
    }

    /// Cancels every pending request of the app.
    public func cancelAllTaskRequests() {
        do {
            try calls.call(AppMethod.cancelAllTaskRequests, AppWire.CancelAllTaskRequests(appId: appID))
        } catch {
            diagnose("cancelAllTaskRequests() failed: \(error)")
        }
    }

    /// The app's pending requests.
    public func pendingTaskRequests() throws(BGTaskSchedulerError) -> [BGTaskRequest] {
        let reply: AppWire.PendingTaskRequestsReply
        do {
            reply = try calls.call(
                AppMethod.pendingTaskRequests, AppWire.PendingTaskRequests(appId: appID), reply: AppWire.PendingTaskRequestsReply.self
            ).reply
        } catch {
            throw BGTaskSchedulerError(error)
        }
        return reply.requests.compactMap(BGTaskRequest.make(from:))
    }

    // MARK: - Delivery (from BGApplication, on the main queue)

    func perform(identifier: String, session: Int) {
        let registration = state.withLock { $0.registrations[identifier] }
        guard let registration else {
            diagnose("perform-task for \(identifier), which has no registered launch handler: completing it as failed")
            sendCompletion(identifier, success: false)
            return
        }
        let queue = registration.queue ?? .main
        let task = BGTask(identifier: identifier, session: session, queue: queue, scheduler: self)
        state.withLock { $0.running[identifier] = task }
        let handler = registration.handler
        queue.async { handler(task) }
    }

    func expire(identifier: String, session: Int) {
        let task = state.withLock { st -> BGTask? in
            guard let task = st.running[identifier], task.session == session else { return nil }
            return task
        }
        guard let task, !task.isCompleted else { return }
        task.queue.async {
            if let handler = task.expirationHandler { handler() }
        }
    }

    /// The daemon went away: the tasks it was running are over.
    func sessionEnded(_ session: Int) {
        state.withLock { st in st.running = st.running.filter { $0.value.session > session } }
    }

    func complete(_ task: BGTask, success: Bool) {
        state.withLock { st in
            if st.running[task.identifier] === task { st.running[task.identifier] = nil }
        }
        // A task of a daemon that has gone away: the new one did not start it.
        guard task.session == sessions.current else { return }
        sendCompletion(task.identifier, success: success)
    }

    private func sendCompletion(_ identifier: String, success: Bool) {
        do {
            try calls.call(AppMethod.completeTask, AppWire.CompleteTask(appId: appID, identifier: identifier, success: success))
        } catch {
            diagnose("setTaskCompleted for \(identifier) failed: \(error)")
        }
    }
}

/// Task requests are mutable configuration objects, filled in and submitted on one thread, like
/// BGTaskRequest on Apple's platforms: not Sendable.
@available(*, unavailable)
extension BGTaskRequest: Sendable {}
