/// bgtaskd-focus's desktop notifications of continued tasks (SPEC §16), pure: fed the live continued
/// tasks (`ListContinuedTasks`) each time they may have changed, it says which notifications to show,
/// update or close; fed the notification server's answers and signals, it says which task a Cancel is for.
/// No clock, no I/O.
///
/// - A task new or changed (title, subtitle, progress) → one `Notify`, replacing the task's notification
///   once the server has given it an id; a task unchanged → nothing.
/// - A task gone from the list (ended, expired, cancelled) → `CloseNotification` of its notification.
/// - A notification the server closed itself (the user dismissed it) is not shown again for that task.
/// - No server (a `Notify` failed): nothing is called again for a minute, or until 5 s after the failure
///   once a server takes the name; a server that comes or goes has everything shown afresh. A
///   D-Bus-activatable server that dies at once (mako without a compositor) takes the name at every call:
///   its coming is never followed by a call sooner than 5 s after the last failure.
public struct TaskNotifications: Sendable {
    /// One live continued task, as `ListContinuedTasks` tells it.
    public struct Task: Hashable, Sendable {
        public var appID: String
        public var taskID: UInt64
        public var title: String
        public var subtitle: String?
        public var completedUnits: Int64
        public var totalUnits: Int64?

        public init(appID: String, taskID: UInt64, title: String, subtitle: String? = nil, completedUnits: Int64 = 0, totalUnits: Int64? = nil) {
            self.appID = appID
            self.taskID = taskID
            self.title = title
            self.subtitle = subtitle
            self.completedUnits = completedUnits
            self.totalUnits = totalUnits
        }

        public var key: Key { Key(appID: appID, taskID: taskID) }

        /// 0–100 when the total is known, nil otherwise.
        public var percent: Int? {
            guard let totalUnits, totalUnits > 0 else { return nil }
            return Int(min(100, max(0, completedUnits * 100 / totalUnits)))
        }
    }

    /// A task is its app's ID and its task ID (task IDs are per daemon, the pair is unique).
    public struct Key: Hashable, Sendable {
        public var appID: String
        public var taskID: UInt64
        public init(appID: String, taskID: UInt64) {
            self.appID = appID
            self.taskID = taskID
        }
    }

    /// What a notification says.
    public struct Content: Hashable, Sendable {
        /// The app's display name, else its ID.
        public var appName: String
        /// The task's title.
        public var summary: String
        /// The subtitle and the progress ("Uploading 3 photos — 40%"), or the units done when the total is unknown.
        public var body: String
        /// The `value` hint, 0–100; nil when the total is unknown.
        public var percent: Int?

        public init(appName: String, summary: String, body: String, percent: Int?) {
            self.appName = appName
            self.summary = summary
            self.body = body
            self.percent = percent
        }
    }

    public enum Step: Hashable, Sendable {
        /// `Notify(replaces_id: replacing ?? 0)`; hand the server's id back with ``shown(_:id:)``.
        case show(Key, Content, replacing: UInt32?)
        /// `CloseNotification(id)`.
        case close(Key, id: UInt32)
    }

    private var shownContent: [Key: Content] = [:]
    private var ids: [Key: UInt32] = [:]
    private var dismissed: Set<Key> = []
    /// After a failed `Notify`: when to call again (monotonic µs); nil: a server answered last.
    public private(set) var retryAtUSec: Int64?
    private var lastFailureUSec: Int64 = 0
    public static let retryUSec: Int64 = 60_000_000
    public static let retryAfterServerUSec: Int64 = 5_000_000

    public init() {}

    /// The steps that make the notifications match `tasks`; `names` maps app IDs to display names.
    /// None while waiting to call a missing server again (``retryAtUSec``).
    public mutating func update(_ tasks: [Task], names: [String: String] = [:], nowUSec: Int64 = 0) -> [Step] {
        if let retryAtUSec, nowUSec < retryAtUSec { return [] }
        retryAtUSec = nil
        var steps: [Step] = []
        let live = Set(tasks.map(\.key))
        for key in shownContent.keys.sorted(by: { ($0.appID, $0.taskID) < ($1.appID, $1.taskID) }) where !live.contains(key) {
            if let id = ids[key] { steps.append(.close(key, id: id)) }
            shownContent[key] = nil
            ids[key] = nil
        }
        dismissed.formIntersection(live)
        for task in tasks where !dismissed.contains(task.key) {
            let content = Self.content(task, name: names[task.appID])
            guard shownContent[task.key] != content else { continue }
            shownContent[task.key] = content
            steps.append(.show(task.key, content, replacing: ids[task.key]))
        }
        return steps
    }

    /// The server's id for the notification of `key` (from `Notify`'s reply); 0: it was not shown (no
    /// server, or not called after a failure in the same update), and is tried again at ``retryAtUSec``.
    public mutating func shown(_ key: Key, id: UInt32, nowUSec: Int64 = 0) {
        if id == 0 {
            shownContent[key] = nil
            if retryAtUSec == nil {
                lastFailureUSec = nowUSec
                retryAtUSec = nowUSec + Self.retryUSec
            }
        } else if shownContent[key] != nil {
            ids[key] = id
        }
    }

    /// The task whose notification has `id`, for `ActionInvoked(id, "cancel")`.
    public func task(forNotification id: UInt32) -> Key? {
        ids.first { $0.value == id }?.key
    }

    /// `NotificationClosed(id)`: the server closed it (dismissed, expired, or closed on our request):
    /// not shown again for that task.
    public mutating func closed(_ id: UInt32) {
        guard let key = task(forNotification: id) else { return }
        ids[key] = nil
        dismissed.insert(key)
    }

    /// A server took org.freedesktop.Notifications (`present`) or left it: what was shown is gone.
    public mutating func server(present: Bool) {
        shownContent = [:]
        ids = [:]
        dismissed = []
        if present, retryAtUSec != nil { retryAtUSec = lastFailureUSec + Self.retryAfterServerUSec }
    }

    public static func content(_ task: Task, name: String?) -> Content {
        let amount: String
        if let percent = task.percent {
            amount = "\(percent)%"
        } else {
            amount = task.totalUnits == nil ? "\(task.completedUnits) done" : "0%"
        }
        let body = task.subtitle.map { $0.isEmpty ? amount : "\($0) — \(amount)" } ?? amount
        let appName = name.flatMap { $0.isEmpty ? nil : $0 } ?? task.appID
        return Content(appName: appName, summary: task.title, body: body, percent: task.percent)
    }
}
