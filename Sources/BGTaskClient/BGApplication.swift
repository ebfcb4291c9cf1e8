public import BGTaskProtocol
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The lifecycle callbacks of an app, as UIKit's `UIApplicationDelegate` has them.
///
/// Every method runs on the main queue (the main actor), one at a time, in the order the daemon sent the
/// events; every method has an empty default. Keep them short: the daemon is waiting for some of them.
@MainActor
public protocol BGApplicationDelegate: AnyObject {
    /// The app checked in after a launch. `launchReason` says why it was launched: `.user` (it goes on to
    /// the foreground), `.backgroundTask` (a `perform-task` follows) or `.remoteNotification`.
    func applicationDidFinishLaunching(_ application: BGApplication, launchReason: LaunchReason)
    /// The app is about to come to the foreground.
    func applicationWillEnterForeground(_ application: BGApplication)
    /// The app is active: in the foreground and receiving input.
    func applicationDidBecomeActive(_ application: BGApplication)
    /// The app is about to lose the focus (an interruption, or on its way to the background).
    func applicationWillResignActive(_ application: BGApplication)
    /// The app is in the background. The daemon is told when this method returns; soon after, an app
    /// that holds no background task is frozen. Begin a background task here (before returning) to finish
    /// work, or call ``BGApplication/deferAcknowledgement()`` to answer later yourself.
    func applicationDidEnterBackground(_ application: BGApplication)
    /// The app is being terminated. When this returns, the process exits unless
    /// ``BGApplication/exitsOnTerminate`` is false.
    func applicationWillTerminate(_ application: BGApplication)
    /// A notification: posted by a shell (`bgtaskctl notify`), `refresh-status-changed`, or
    /// `remote-notification` for a remote-notification wake — a wake ends when this method returns
    /// (or when a deferred acknowledgement is sent).
    func application(_ application: BGApplication, didReceiveNotification name: String, payload: JSON?)
    /// The system is short of memory: release what can be rebuilt.
    func applicationDidReceiveMemoryWarning(_ application: BGApplication)
    /// Every event as it arrives, before the method for its kind (logging, tools, tests).
    func application(_ application: BGApplication, didReceive event: BGApplicationEvent)
    /// The app checked in (at start, and again after the daemon came back).
    func applicationDidCheckIn(_ application: BGApplication)
    /// Checking in failed, or the connection to the daemon was lost; the library keeps retrying.
    /// Background tasks begun before a loss are gone (their expiration handlers will not run).
    func application(_ application: BGApplication, connectionDidFail error: BGTaskClientError)
}

extension BGApplicationDelegate {
    public func applicationDidFinishLaunching(_ application: BGApplication, launchReason: LaunchReason) {}
    public func applicationWillEnterForeground(_ application: BGApplication) {}
    public func applicationDidBecomeActive(_ application: BGApplication) {}
    public func applicationWillResignActive(_ application: BGApplication) {}
    public func applicationDidEnterBackground(_ application: BGApplication) {}
    public func applicationWillTerminate(_ application: BGApplication) {}
    public func application(_ application: BGApplication, didReceiveNotification name: String, payload: JSON?) {}
    public func applicationDidReceiveMemoryWarning(_ application: BGApplication) {}
    public func application(_ application: BGApplication, didReceive event: BGApplicationEvent) {}
    public func applicationDidCheckIn(_ application: BGApplication) {}
    public func application(_ application: BGApplication, connectionDidFail error: BGTaskClientError) {}
}

/// A continuous background mode an activity can hold (SPEC §4); the manifest must declare it.
public struct BackgroundMode: RawRepresentable, Hashable, Sendable {
    /// The mode's name in `BackgroundModes=` and on the wire.
    public let rawValue: String
    /// A mode by its wire name.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Playing audio.
    public static let audio = BackgroundMode(rawValue: "audio")
    /// Tracking location.
    public static let location = BackgroundMode(rawValue: "location")
    /// Voice over IP.
    public static let voip = BackgroundMode(rawValue: "voip")
    /// Talking to an external accessory.
    public static let externalAccessory = BackgroundMode(rawValue: "external-accessory")
    /// Talking to a Bluetooth device.
    public static let bluetooth = BackgroundMode(rawValue: "bluetooth")
}

/// An activity of a background mode (`activityId`).
public struct BackgroundActivityIdentifier: RawRepresentable, Hashable, Sendable {
    /// The daemon's `activityId`.
    public let rawValue: Int
    /// Wraps an `activityId`.
    public init(rawValue: Int) { self.rawValue = rawValue }
}

/// A `needsAck` event whose acknowledgement the app took over with ``BGApplication/deferAcknowledgement()``.
public final class BGEventAcknowledgement: Sendable {
    /// The event to acknowledge.
    public let eventID: Int64
    let session: Int
    private let application: BGApplication
    private let state = Mutex((deferred: false, sent: false))

    init(application: BGApplication, eventID: Int64, session: Int) {
        self.application = application
        self.eventID = eventID
        self.session = session
    }

    var isDeferred: Bool { state.withLock { $0.deferred } }

    func markDeferred() { state.withLock { $0.deferred = true } }

    /// Tells the daemon the event is handled. Only the first call counts; from any thread. An
    /// acknowledgement for a daemon that has since gone away is not sent.
    public func acknowledge() {
        let first = state.withLock { st in
            defer { st.sent = true }
            return !st.sent
        }
        if first { application.sendAcknowledgement(eventID, session: session) }
    }
}

/// The application object: checks in with bgtaskd, delivers lifecycle events to its delegate, and grants
/// background execution time (UIKit's `UIApplication`).
///
/// ```swift
/// let app = BGApplication.shared          // BGTASKD_APP_ID, BGTASKD_SOCKET
/// app.delegate = AppDelegate()
/// app.run()                               // checks in; delegate methods run on the main queue
/// ```
///
/// Threads: the event stream is read on a thread of the library's own; events are delivered on the main
/// queue, so the main queue must be running — ``run()`` (which calls `dispatchMain()`), or an `async` main.
/// Everything else may be called from any thread. Calls to the daemon block for one round trip (tens
/// of microseconds on a local socket).
///
/// Connections: one carries the event stream, one every other call. The second stays open for the app's
/// lifetime, because a background task lives no longer than the connection that began it. If the daemon
/// goes away, the library reconnects with backoff and checks in again; background tasks begun before are
/// gone with the old daemon.
public final class BGApplication: Sendable {
    /// UIKit's application states.
    public enum State: String, Sendable, CaseIterable {
        /// In the foreground, receiving input.
        case active
        /// In the foreground, not receiving input (launching, interrupted, in transition).
        case inactive
        /// In the background.
        case background
    }

    /// Where bgtaskd listens unless `BGTASKD_SOCKET` says otherwise.
    public static let defaultSocketPath = "/run/bgtaskd/io.bgtaskd"

    /// `BGTASKD_SOCKET`, else ``defaultSocketPath``.
    public static var environmentSocketPath: String {
        environment("BGTASKD_SOCKET") ?? defaultSocketPath
    }

    /// `BGTASKD_APP_ID`, set by the daemon for the apps it launches.
    public static var environmentAppID: String? {
        environment("BGTASKD_APP_ID")
    }

    private static let sharedInstance = Mutex<BGApplication?>(nil)

    /// The app's application object: the first one created, else one made from the environment
    /// (`BGTASKD_APP_ID`, `BGTASKD_SOCKET`).
    public static var shared: BGApplication {
        sharedInstance.withLock { current in
            if let current { return current }
            let app = BGApplication(
                appID: environmentAppID ?? "", socketPath: environmentSocketPath, backoff: Backoff(),
                registersAsShared: false)
            current = app
            return app
        }
    }

    /// The app's ID (reverse-DNS, as in its manifest).
    public let appID: String
    /// The daemon's socket.
    public let socketPath: String
    /// The scheduler for this app's scheduled tasks (``BGTaskScheduler/shared`` for the shared app).
    public let taskScheduler: BGTaskScheduler

    /// Receives the lifecycle events. Held strongly. Set it before ``run()``.
    @MainActor public var delegate: (any BGApplicationDelegate)?

    /// Whether the process exits (status 0) once `applicationWillTerminate` returns, as an iOS app is
    /// ended after it. Default true.
    @MainActor public var exitsOnTerminate = true

    @MainActor private var acknowledgementInDelivery: BGEventAcknowledgement?

    let calls: CallChannel
    private let sessions: SessionCounter
    private let backoff: Backoff
    private let stream = Mutex<EventStream?>(nil)

    private struct TaskEntry {
        var name: String?
        var session: Int
        var generation: Int
        var handler: (@MainActor @Sendable (BackgroundTaskIdentifier) -> Void)?
    }

    private struct SessionTask: Hashable {
        var session: Int
        var task: Int
    }

    private struct Shared {
        var tracker = LifecycleTracker()
        var checkedIn = false
        var tasks: [BackgroundTaskIdentifier: TaskEntry] = [:]
        /// Expirations that arrived before `BeginBackgroundTask` returned to the thread that called it.
        var earlyExpirations: Set<SessionTask> = []
        /// Tasks this app ended on the current connection: ending twice stays local.
        var ended: Set<BackgroundTaskIdentifier> = []
        var activities: [BackgroundActivityIdentifier: Int] = [:]
        var lastReportedFailure: BGTaskClientError?
    }
    private let shared = Mutex(Shared())

    /// An application object for `appID` on the daemon at `socketPath`. The first one created becomes
    /// ``shared``.
    public convenience init(appID: String, socketPath: String = BGApplication.environmentSocketPath) {
        self.init(appID: appID, socketPath: socketPath, backoff: Backoff(), registersAsShared: true)
    }

    init(appID: String, socketPath: String, backoff: Backoff, callTimeout: Double = 10, registersAsShared: Bool) {
        self.appID = appID
        self.socketPath = socketPath
        self.backoff = backoff
        let calls = CallChannel(path: socketPath, timeout: callTimeout)
        let sessions = SessionCounter()
        self.calls = calls
        self.sessions = sessions
        self.taskScheduler = BGTaskScheduler(appID: appID, calls: calls, sessions: sessions)
        if registersAsShared {
            Self.sharedInstance.withLock { if $0 == nil { $0 = self } }
        }
    }

    // MARK: - Running

    /// Checks in and delivers events to the delegate on the main queue, forever (`dispatchMain()`).
    public func run() -> Never {
        start()
        dispatchMain()
    }

    /// Checks in and starts delivering events on the main queue, and returns. For apps whose main queue
    /// is already running (an `async` main, or a later `dispatchMain()`).
    public func start() {
        guard !appID.isEmpty else {
            diagnose("no app ID (BGTASKD_APP_ID is not set): not checking in")
            post(.checkInFailed(.noSuchApp(""), retryIn: .infinity))
            return
        }
        let stream = self.stream.withLock { current in
            if let current { return current }
            let made = EventStream(appID: appID, path: socketPath, backoff: backoff) { [weak self] input in
                self?.streamReported(input)
            }
            current = made
            return made
        }
        stream.start()
    }

    /// Stops the event stream and closes the connections: the daemon takes the app as gone and releases
    /// its background tasks.
    public func stop() {
        stream.withLock { $0 }?.stop()
        calls.reset()
    }

    /// Whether the app is checked in (its event stream is live).
    public var isCheckedIn: Bool { shared.withLock { $0.checkedIn } }

    // MARK: - State

    /// The app's state (UIKit's `applicationState`), as of the event being delivered or last delivered.
    public var applicationState: State { shared.withLock { $0.tracker.applicationState } }

    /// The daemon's name for the app's state, as of the last event delivered; nil before check-in.
    public var lifecycleState: BGLifecycleState? { shared.withLock { $0.tracker.lifecycleState } }

    /// Whether the system may launch or wake the app in the background. Kept current by the event stream
    /// (a `refresh-status-changed` notification follows each change); asked of the daemon before check-in,
    /// `.denied` if it cannot be reached.
    public var backgroundRefreshStatus: BackgroundRefreshStatus {
        if let known = shared.withLock({ $0.tracker.refreshStatus }) { return known }
        do {
            let reply = try calls.call(AppMethod.refreshStatus, AppWire.RefreshStatusCall(appId: appID))
            return (try? AppWire.RefreshStatusReply(json: reply))?.status ?? .denied
        } catch {
            return .denied
        }
    }

    /// Background execution time left, in seconds: `Double.greatestFiniteMagnitude` in the foreground
    /// (unlimited), as in UIKit. Shared by all of the app's background tasks. Without a daemon to ask it
    /// is unlimited; if the daemon cannot answer, 0 in the background.
    public var backgroundTimeRemaining: Double {
        do {
            let reply = try calls.call(AppMethod.backgroundTimeRemaining, AppWire.BackgroundTimeRemaining(appId: appID))
            return secondsRemaining(fromUSec: (try? AppWire.BackgroundTimeRemainingReply(json: reply))?.remainingUSec)
        } catch .cannotConnect {
            return .greatestFiniteMagnitude
        } catch {
            return applicationState == .background ? 0 : .greatestFiniteMagnitude
        }
    }

    // MARK: - Background tasks

    /// Asks for background execution time (UIKit's `beginBackgroundTask(withName:expirationHandler:)`).
    ///
    /// Returns `.invalid` when it is denied (the budget is spent, too many tasks) or the daemon cannot be
    /// reached. Shortly before the time runs out `expirationHandler` runs on the main actor: end the task
    /// there, or the app is terminated. Call ``endBackgroundTask(_:)`` when the work is done.
    @discardableResult
    public func beginBackgroundTask(
        withName name: String? = nil, expirationHandler: (@MainActor @Sendable () -> Void)? = nil
    ) -> BackgroundTaskIdentifier {
        guard let expirationHandler else { return beginReportingFailure(name, nil) }
        return beginReportingFailure(name) { _ in expirationHandler() }
    }

    /// Like ``beginBackgroundTask(withName:expirationHandler:)-(_,(()->Void)?)``, with the task's identifier
    /// handed to the expiration handler, so that it can end the task without capturing a variable:
    /// `app.beginBackgroundTask(withName: "sync") { app.endBackgroundTask($0) }`.
    @discardableResult
    public func beginBackgroundTask(
        withName name: String? = nil, expirationHandler: @escaping @MainActor @Sendable (BackgroundTaskIdentifier) -> Void
    ) -> BackgroundTaskIdentifier {
        beginReportingFailure(name, expirationHandler)
    }

    private func beginReportingFailure(
        _ name: String?, _ handler: (@MainActor @Sendable (BackgroundTaskIdentifier) -> Void)?
    ) -> BackgroundTaskIdentifier {
        do {
            return try requestBackgroundTask(withName: name, expirationHandler: handler)
        } catch {
            diagnose("beginBackgroundTask(\(name ?? "unnamed")) failed: \(error)")
            return .invalid
        }
    }

    /// Like ``beginBackgroundTask(withName:expirationHandler:)-(_,(()->Void)?)`` but says why a request could not
    /// be made. A denial is not an error: it returns `.invalid`.
    public func requestBackgroundTask(
        withName name: String? = nil,
        expirationHandler: (@MainActor @Sendable (BackgroundTaskIdentifier) -> Void)? = nil
    ) throws(BGTaskClientError) -> BackgroundTaskIdentifier {
        let session = sessions.current
        let (reply, generation) = try calls.call(
            AppMethod.beginBackgroundTask, AppWire.BeginBackgroundTask(appId: appID, name: name),
            reply: AppWire.BeginBackgroundTaskReply.self)
        guard let value = Int(exactly: reply.taskId), value >= 0 else {
            throw .invalidReply("BeginBackgroundTask answered without a taskId")
        }
        let id = BackgroundTaskIdentifier(rawValue: value)
        guard id != .invalid else { return .invalid }
        guard session == sessions.current else {
            // The daemon went away during the call: whatever it granted is gone.
            return .invalid
        }
        let expiredEarly = shared.withLock { st in
            st.tasks[id] = TaskEntry(name: name, session: session, generation: generation, handler: expirationHandler)
            st.ended.remove(id)
            return st.earlyExpirations.remove(SessionTask(session: session, task: value)) != nil
        }
        if expiredEarly, let handler = expirationHandler {
            DispatchQueue.main.async { MainActor.assumeIsolated { handler(id) } }
        }
        return id
    }

    /// Ends a background task (UIKit's `endBackgroundTask(_:)`). Ending `.invalid`, an ended task or one
    /// lost with an old connection is harmless; so is ending it from its expiration handler.
    public func endBackgroundTask(_ identifier: BackgroundTaskIdentifier) {
        guard identifier != .invalid else { return }
        let generation = calls.generation
        let send = shared.withLock { st -> Bool in
            if let entry = st.tasks.removeValue(forKey: identifier) {
                // Its connection is gone, and the task with it; the number may be another task's now.
                guard entry.generation == generation else { return false }
                rememberEnded(identifier, in: &st)
                return true
            }
            // Not begun through this object (or already ended): let the daemon judge, once.
            if st.ended.contains(identifier) { return false }
            rememberEnded(identifier, in: &st)
            return true
        }
        guard send else { return }
        do {
            try calls.call(AppMethod.endBackgroundTask, AppWire.EndBackgroundTask(appId: appID, taskId: Int64(identifier.rawValue)))
        } catch {
            diagnose("endBackgroundTask(\(identifier)) failed: \(error)")
        }
    }

    private func rememberEnded(_ identifier: BackgroundTaskIdentifier, in st: inout Shared) {
        if st.ended.count >= 1024 { st.ended.removeAll(keepingCapacity: true) }
        st.ended.insert(identifier)
    }

    /// Runs `body` inside a background task: begins it, runs `body`, ends it (also when `body` throws).
    ///
    /// When the time is about to run out, `expirationHandler` runs (on the main actor) and the task is
    /// ended, so that the app is not terminated; `body` goes on but may be frozen at any moment. To cover
    /// the moment the app enters the background, begin a task inside `applicationDidEnterBackground`
    /// itself: a Swift `Task` started there runs after the method has returned.
    /// `body` runs on the caller's actor (`isolation`).
    public func withBackgroundTask<T>(
        named name: String? = nil, expirationHandler: (@MainActor @Sendable () -> Void)? = nil,
        isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T
    ) async rethrows -> T {
        let identifier = beginBackgroundTask(withName: name) { [self] identifier in
            expirationHandler?()
            endBackgroundTask(identifier)
        }
        defer { endBackgroundTask(identifier) }
        return try await body()
    }

    // MARK: - Background modes

    /// Starts an activity of a continuous background mode ("audio is playing"): while it lasts, the app
    /// keeps running in the background without a time budget. The manifest must declare the mode.
    public func beginActivity(_ mode: BackgroundMode) throws(BGTaskClientError) -> BackgroundActivityIdentifier {
        // A mode this library names but the daemon's vocabulary does not know is refused as the daemon would.
        guard let known = BGTaskModel.BackgroundMode(rawValue: mode.rawValue) else { throw .invalidParameter("mode") }
        let (reply, generation) = try calls.call(
            AppMethod.beginActivity, AppWire.BeginActivity(appId: appID, mode: known), reply: AppWire.BeginActivityReply.self)
        guard let value = Int(exactly: reply.activityId) else {
            throw .invalidReply("BeginActivity answered without an activityId")
        }
        let id = BackgroundActivityIdentifier(rawValue: value)
        shared.withLock { $0.activities[id] = generation }
        return id
    }

    /// Ends an activity. Ending an unknown or ended one is harmless.
    public func endActivity(_ identifier: BackgroundActivityIdentifier) {
        let generation = calls.generation
        let stale = shared.withLock { st in st.activities.removeValue(forKey: identifier).map { $0 != generation } ?? false }
        guard !stale else { return }
        do {
            try calls.call(AppMethod.endActivity, AppWire.EndActivity(appId: appID, activityId: Int64(identifier.rawValue)))
        } catch {
            diagnose("endActivity(\(identifier.rawValue)) failed: \(error)")
        }
    }

    // MARK: - Acknowledgements

    /// Takes over the acknowledgement of the event being delivered (`did-enter-background`, a
    /// remote-notification wake): the library will not send it when the delegate method returns; call
    /// ``BGEventAcknowledgement/acknowledge()`` when ready. Until then the daemon keeps the app running —
    /// up to its timeout, after which it terminates the app (`did-enter-background-timeout`).
    /// Returns nil outside the delegate method of an event that needs an acknowledgement.
    @MainActor
    public func deferAcknowledgement() -> BGEventAcknowledgement? {
        acknowledgementInDelivery?.markDeferred()
        return acknowledgementInDelivery
    }

    func sendAcknowledgement(_ eventID: Int64, session: Int) {
        // An event of a daemon that has gone away: the new one knows nothing of it.
        guard session == sessions.current else { return }
        do {
            try calls.call(AppMethod.acknowledge, AppWire.Acknowledge(eventId: eventID))
        } catch {
            diagnose("acknowledging event \(eventID) failed: \(error)")
        }
    }

    // MARK: - Event delivery

    /// On the stream's thread: bookkeeping that must not wait for the main queue, then hand over.
    private func streamReported(_ input: EventStream.Input) {
        switch input {
        case .checkedIn(_, let session):
            sessions.set(session)
            let recovered = shared.withLock { st -> Bool in
                defer { st.lastReportedFailure = nil }
                return st.lastReportedFailure != nil
            }
            if recovered { diagnose("checked in as \(appID)") }
            post(input)
        case .event:
            post(input)
        case .lost(let error, let session):
            // The daemon is gone or dropped the app: every assertion went with it.
            sessions.set(session + 1)
            calls.reset()
            shared.withLock { st in
                // Their numbers mean nothing to the next daemon: ending them stays local.
                st.ended = Set(st.tasks.filter { $0.value.session <= session }.keys)
                st.tasks = st.tasks.filter { $0.value.session > session }
                st.earlyExpirations = st.earlyExpirations.filter { $0.session > session }
                st.activities.removeAll()
                st.lastReportedFailure = error
            }
            taskScheduler.sessionEnded(session)
            diagnose("lost the connection to bgtaskd (\(error)); reconnecting")
            post(input)
        case .checkInFailed(let error, let delay):
            let repeated = shared.withLock { st in
                defer { st.lastReportedFailure = error }
                return st.lastReportedFailure == error
            }
            guard !repeated else { return }
            diagnose("cannot check in as \(appID): \(error); retrying in \(delay) s")
            post(input)
        }
    }

    private func post(_ input: EventStream.Input) {
        DispatchQueue.main.async { [self] in
            MainActor.assumeIsolated { deliver(input) }
        }
    }

    @MainActor
    private func deliver(_ input: EventStream.Input) {
        switch input {
        case .checkedIn(let reply, _):
            shared.withLock { st in
                st.tracker.apply(reply)
                st.checkedIn = true
            }
            delegate?.applicationDidCheckIn(self)
        case .event(let reply, let session):
            shared.withLock { $0.tracker.apply(reply) }
            if let event = reply.event { dispatch(event, session: session) }
        case .lost(let error, _):
            shared.withLock { $0.checkedIn = false }
            delegate?.application(self, connectionDidFail: error)
        case .checkInFailed(let error, _):
            delegate?.application(self, connectionDidFail: error)
        }
    }

    @MainActor
    private func dispatch(_ event: BGApplicationEvent, session: Int) {
        let acknowledgement = event.needsAck ? BGEventAcknowledgement(application: self, eventID: event.id, session: session) : nil
        let outer = acknowledgementInDelivery
        acknowledgementInDelivery = acknowledgement
        let delegate = self.delegate
        delegate?.application(self, didReceive: event)
        switch event.kind {
        case .didFinishLaunching:
            delegate?.applicationDidFinishLaunching(self, launchReason: event.launchReason ?? .user)
        case .willEnterForeground:
            delegate?.applicationWillEnterForeground(self)
        case .didBecomeActive:
            delegate?.applicationDidBecomeActive(self)
        case .willResignActive:
            delegate?.applicationWillResignActive(self)
        case .didEnterBackground:
            delegate?.applicationDidEnterBackground(self)
        case .backgroundTaskWillExpire:
            if let task = event.taskID {
                expire(task, session: session)
            } else if let identifier = event.identifier {
                taskScheduler.expire(identifier: identifier, session: session)
            }
        case .willTerminate:
            delegate?.applicationWillTerminate(self)
        case .performTask:
            if let identifier = event.identifier { taskScheduler.perform(identifier: identifier, session: session) }
        case .notification:
            delegate?.application(self, didReceiveNotification: event.name ?? "", payload: event.payload)
        case .memoryWarning:
            delegate?.applicationDidReceiveMemoryWarning(self)
        default:
            break  // a kind from a newer daemon: acknowledged below if it asks for it
        }
        acknowledgementInDelivery = outer
        if let acknowledgement, !acknowledgement.isDeferred { acknowledgement.acknowledge() }
        if event.kind == .willTerminate && exitsOnTerminate { exit(0) }
    }

    @MainActor
    private func expire(_ task: BackgroundTaskIdentifier, session: Int) {
        let handler = shared.withLock { st -> (@MainActor @Sendable (BackgroundTaskIdentifier) -> Void)? in
            if let entry = st.tasks[task], entry.session == session { return entry.handler }
            // Not registered yet: BeginBackgroundTask's reply and this event crossed.
            if session == sessions.current {
                if st.earlyExpirations.count >= 256 { st.earlyExpirations.removeAll() }
                st.earlyExpirations.insert(SessionTask(session: session, task: task.rawValue))
            }
            return nil
        }
        handler?(task)
    }
}

/// Counts check-ins: the session of the stream that is (or will next be) live. Work begun in one session
/// belongs to that daemon and is dropped when it goes away.
final class SessionCounter: Sendable {
    private let value = Mutex(1)
    var current: Int { value.withLock { $0 } }
    func set(_ session: Int) { value.withLock { $0 = session } }
}

func environment(_ name: String) -> String? {
    guard let raw = getenv(name) else { return nil }
    let value = String(cString: raw)
    return value.isEmpty ? nil : value
}
