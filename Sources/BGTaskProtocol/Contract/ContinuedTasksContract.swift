// SPEC §16: continued tasks on the wire (io.bgtaskd.App BeginContinuedTask, UpdateTaskProgress;
// io.bgtaskd.Manager ListContinuedTasks, CancelContinuedTask).
extension AppWire {
    public struct BeginContinuedTask: WireAppNamed {
        public static let fields = ["appId", "identifier", "title", "subtitle", "totalUnits"]
        public var appId: String
        public var identifier: String
        public var title: String
        public var subtitle: String?
        public var totalUnits: Int64?
        public init(appId: String, identifier: String, title: String, subtitle: String? = nil, totalUnits: Int64? = nil) {
            self.appId = appId
            self.identifier = identifier
            self.title = title
            self.subtitle = subtitle
            self.totalUnits = totalUnits
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(
                appId: try r.string("appId"), identifier: try r.string("identifier"), title: try r.string("title"),
                subtitle: try r.optionalString("subtitle"), totalUnits: try r.optionalInt("totalUnits"))
            guard !identifier.isEmpty else { throw WireFieldError("identifier") }
            if let totalUnits, totalUnits < 0 { throw WireFieldError("totalUnits") }
        }
        public var json: [String: JSON] {
            var o: [String: JSON] = ["appId": .string(appId), "identifier": .string(identifier), "title": .string(title)]
            o.put("subtitle", subtitle.map { .string($0) })
            o.put("totalUnits", totalUnits.map { .int($0) })
            return o
        }
    }

    public struct UpdateTaskProgress: WireAppNamed {
        public static let fields = ["appId", "taskId", "completedUnits", "totalUnits", "subtitle"]
        public var appId: String
        public var taskId: Int64
        public var completedUnits: Int64
        public var totalUnits: Int64?
        public var subtitle: String?
        public init(appId: String, taskId: Int64, completedUnits: Int64, totalUnits: Int64? = nil, subtitle: String? = nil) {
            self.appId = appId
            self.taskId = taskId
            self.completedUnits = completedUnits
            self.totalUnits = totalUnits
            self.subtitle = subtitle
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(
                appId: try r.string("appId"), taskId: try r.int("taskId"), completedUnits: try r.int("completedUnits"),
                totalUnits: try r.optionalInt("totalUnits"), subtitle: try r.optionalString("subtitle"))
            guard taskId > 0 else { throw WireFieldError("taskId") }
            guard completedUnits >= 0 else { throw WireFieldError("completedUnits") }
            if let totalUnits, totalUnits < 0 { throw WireFieldError("totalUnits") }
        }
        public var json: [String: JSON] {
            var o: [String: JSON] = ["appId": .string(appId), "taskId": .int(taskId), "completedUnits": .int(completedUnits)]
            o.put("totalUnits", totalUnits.map { .int($0) })
            o.put("subtitle", subtitle.map { .string($0) })
            return o
        }
    }
}

extension ManagerWire {
    /// `type ContinuedTask`.
    public struct ContinuedTask: WireMessage {
        public static let fields = ["taskId", "appId", "identifier", "title", "subtitle", "completedUnits", "totalUnits"]
        public var taskId: Int64
        public var appId: String
        public var identifier: String
        public var title: String
        public var subtitle: String?
        public var completedUnits: Int64
        public var totalUnits: Int64?
        public init(
            taskId: Int64, appId: String, identifier: String, title: String, subtitle: String?, completedUnits: Int64,
            totalUnits: Int64?
        ) {
            self.taskId = taskId
            self.appId = appId
            self.identifier = identifier
            self.title = title
            self.subtitle = subtitle
            self.completedUnits = completedUnits
            self.totalUnits = totalUnits
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(
                taskId: try r.int("taskId"), appId: try r.string("appId"), identifier: try r.string("identifier"),
                title: try r.string("title"), subtitle: try r.optionalString("subtitle"),
                completedUnits: try r.int("completedUnits"), totalUnits: try r.optionalInt("totalUnits"))
        }
        public var json: [String: JSON] {
            [
                "taskId": .int(taskId), "appId": .string(appId), "identifier": .string(identifier), "title": .string(title),
                "subtitle": .orNull(subtitle), "completedUnits": .int(completedUnits), "totalUnits": .orNull(totalUnits),
            ]
        }
    }

    public struct ListContinuedTasksReply: WireMessage {
        public static let fields = ["tasks"]
        public var tasks: [ContinuedTask]
        public init(tasks: [ContinuedTask]) { self.tasks = tasks }
        public init(json: [String: JSON]) throws(WireFieldError) { tasks = try WireReader(json).messages("tasks") }
        public var json: [String: JSON] { ["tasks": .array(tasks.map { .object($0.json) })] }
    }

    public struct CancelContinuedTask: WireMessage {
        public static let fields = ["appId", "taskId"]
        public var appId: String
        public var taskId: Int64
        public init(appId: String, taskId: Int64) {
            self.appId = appId
            self.taskId = taskId
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(appId: try r.string("appId"), taskId: try r.int("taskId"))
            guard taskId > 0 else { throw WireFieldError("taskId") }
        }
        public var json: [String: JSON] { ["appId": .string(appId), "taskId": .int(taskId)] }
    }
}
