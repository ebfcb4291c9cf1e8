import BGTaskProtocol
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

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

    /// SPEC §15: receives the events of the app's scenes (windows). Set it before ``run()``: the app then
    /// checks in with `scenes: true`. Held strongly.
    @MainActor public var sceneDelegate: (any BGSceneDelegate)? {
        didSet { wantsScenes.withLock { $0 = sceneDelegate != nil } }
    }
    let wantsScenes = Mutex(false)
    /// The snapshot hooks per scene (``setSnapshotHook(forScene:_:)``).
    @MainActor var snapshotHooks: [String: @MainActor (BGScene, String) -> Bool] = [:]

    /// Whether the process exits (status 0) once `applicationWillTerminate` returns, as an iOS app is
    /// ended after it. Default true.
    @MainActor public var exitsOnTerminate = true

    @MainActor var acknowledgementInDelivery: BGEventAcknowledgement?

    let calls: CallChannel
    let sessions: SessionCounter
    private let backoff: Backoff
    private let stream = Mutex<EventStream?>(nil)

    struct TaskEntry {
        var name: String?
        var session: Int
        var generation: Int
        var handler: (@MainActor @Sendable (BackgroundTaskIdentifier) -> Void)?
    }

    struct SessionTask: Hashable {
        var session: Int
        var task: Int
    }

    struct Shared {
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
    let shared = Mutex(Shared())

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
            let scenes = wantsScenes.withLock { $0 }
            let made = EventStream(appID: appID, path: socketPath, backoff: backoff, scenes: scenes) { [weak self] input in
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
            return (try? AppWire.RefreshStatusReply(json: reply))?.status.known ?? .denied
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
