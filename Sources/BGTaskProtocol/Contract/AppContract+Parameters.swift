public import BGTaskModel

// The parameters of the methods of `io.bgtaskd.App`.
extension AppWire {
    public struct CheckIn: WireMessage {
        public static let fields = ["appId", "scenes"]
        public var appId: String
        /// SPEC §15: scene events and scene-snapshot too.
        public var scenes: Bool?
        public init(appId: String, scenes: Bool? = nil) {
            self.appId = appId
            self.scenes = scenes
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(appId: try r.string("appId"), scenes: try r.optionalBool("scenes"))
        }
        public var json: [String: JSON] {
            var o: [String: JSON] = ["appId": .string(appId)]
            o.put("scenes", scenes.map { .bool($0) })
            return o
        }
    }

    public struct Acknowledge: WireMessage {
        public static let fields = ["eventId"]
        /// Event ids start at 1.
        public var eventId: Int64
        public init(eventId: Int64) { self.eventId = eventId }
        public init(json: [String: JSON]) throws(WireFieldError) {
            eventId = try WireReader(json).int("eventId")
            guard eventId > 0 else { throw WireFieldError("eventId") }
        }
        public var json: [String: JSON] { ["eventId": .int(eventId)] }
    }

    public struct BeginBackgroundTask: WireAppNamed {
        public static let fields = ["appId", "name"]
        public var appId: String
        public var name: String?
        public init(appId: String, name: String? = nil) {
            self.appId = appId
            self.name = name
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(appId: try r.string("appId"), name: try r.optionalString("name"))
        }
        public var json: [String: JSON] {
            var o: [String: JSON] = ["appId": .string(appId)]
            o.put("name", name.map { .string($0) })
            return o
        }
    }

    public struct EndBackgroundTask: WireAppNamed {
        public static let fields = ["appId", "taskId"]
        public var appId: String
        /// 0 is the invalid identifier (ending it is harmless); negative is not an identifier.
        public var taskId: Int64
        public init(appId: String, taskId: Int64) {
            self.appId = appId
            self.taskId = taskId
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(appId: try r.string("appId"), taskId: try r.int("taskId"))
            guard taskId >= 0 else { throw WireFieldError("taskId") }
        }
        public var json: [String: JSON] { ["appId": .string(appId), "taskId": .int(taskId)] }
    }

    public struct BackgroundTimeRemaining: AppOnly {
        public static let fields = ["appId"]
        public var appId: String
        public init(appId: String) { self.appId = appId }
        public init(json: [String: JSON]) throws(WireFieldError) { appId = try WireReader(json).string("appId") }
        public var json: [String: JSON] { ["appId": .string(appId)] }
    }

    public struct BeginActivity: WireMessage {
        public static let fields = ["appId", "mode"]
        public var appId: String
        public var mode: BackgroundMode
        public init(appId: String, mode: BackgroundMode) {
            self.appId = appId
            self.mode = mode
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(appId: try r.string("appId"), mode: try r.value("mode"))
        }
        public var json: [String: JSON] { ["appId": .string(appId), "mode": .raw(mode)] }
    }

    public struct EndActivity: WireMessage {
        public static let fields = ["appId", "activityId"]
        public var appId: String
        public var activityId: Int64
        public init(appId: String, activityId: Int64) {
            self.appId = appId
            self.activityId = activityId
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(appId: try r.string("appId"), activityId: try r.int("activityId"))
            guard activityId >= 0 else { throw WireFieldError("activityId") }
        }
        public var json: [String: JSON] { ["appId": .string(appId), "activityId": .int(activityId)] }
    }

    public struct SubmitTaskRequest: WireMessage {
        public static let fields = ["appId", "identifier", "kind", "earliestBeginUSec", "requiresNetwork", "requiresExternalPower"]
        public var appId: String
        /// Not empty.
        public var identifier: String
        public var kind: TaskKind
        /// Wall-clock microseconds since the epoch, not negative.
        public var earliestBeginUSec: Int64?
        public var requiresNetwork: Bool?
        public var requiresExternalPower: Bool?
        public init(
            appId: String, identifier: String, kind: TaskKind, earliestBeginUSec: Int64? = nil, requiresNetwork: Bool? = nil,
            requiresExternalPower: Bool? = nil
        ) {
            self.appId = appId
            self.identifier = identifier
            self.kind = kind
            self.earliestBeginUSec = earliestBeginUSec
            self.requiresNetwork = requiresNetwork
            self.requiresExternalPower = requiresExternalPower
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            // Field by field in declaration order: the first that does not fit is the one named.
            let r = WireReader(json)
            let appId = try r.string("appId")
            let identifier = try r.string("identifier")
            guard !identifier.isEmpty else { throw WireFieldError("identifier") }
            let kind: TaskKind = try r.value("kind")
            let begin = try r.optionalInt("earliestBeginUSec")
            if let begin, begin < 0 { throw WireFieldError("earliestBeginUSec") }
            self.init(
                appId: appId, identifier: identifier, kind: kind, earliestBeginUSec: begin,
                requiresNetwork: try r.optionalBool("requiresNetwork"), requiresExternalPower: try r.optionalBool("requiresExternalPower"))
        }
        public var json: [String: JSON] {
            var o: [String: JSON] = ["appId": .string(appId), "identifier": .string(identifier), "kind": .raw(kind)]
            o.put("earliestBeginUSec", earliestBeginUSec.map { .int($0) })
            o.put("requiresNetwork", requiresNetwork.map { .bool($0) })
            o.put("requiresExternalPower", requiresExternalPower.map { .bool($0) })
            return o
        }
    }

    public struct CancelTaskRequest: WireMessage {
        public static let fields = ["appId", "identifier"]
        public var appId: String
        public var identifier: String
        public init(appId: String, identifier: String) {
            self.appId = appId
            self.identifier = identifier
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(appId: try r.string("appId"), identifier: try r.string("identifier"))
        }
        public var json: [String: JSON] { ["appId": .string(appId), "identifier": .string(identifier)] }
    }

    public struct CancelAllTaskRequests: AppOnly {
        public static let fields = ["appId"]
        public var appId: String
        public init(appId: String) { self.appId = appId }
        public init(json: [String: JSON]) throws(WireFieldError) { appId = try WireReader(json).string("appId") }
        public var json: [String: JSON] { ["appId": .string(appId)] }
    }

    public struct PendingTaskRequests: AppOnly {
        public static let fields = ["appId"]
        public var appId: String
        public init(appId: String) { self.appId = appId }
        public init(json: [String: JSON]) throws(WireFieldError) { appId = try WireReader(json).string("appId") }
        public var json: [String: JSON] { ["appId": .string(appId)] }
    }

    public struct CompleteTask: WireMessage {
        public static let fields = ["appId", "identifier", "success"]
        public var appId: String
        public var identifier: String
        public var success: Bool
        public init(appId: String, identifier: String, success: Bool) {
            self.appId = appId
            self.identifier = identifier
            self.success = success
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(appId: try r.string("appId"), identifier: try r.string("identifier"), success: try r.bool("success"))
        }
        public var json: [String: JSON] {
            ["appId": .string(appId), "identifier": .string(identifier), "success": .bool(success)]
        }
    }

    /// `RefreshStatus`'s parameters (the reply is `RefreshStatusReply`).
    public struct RefreshStatusCall: AppOnly {
        public static let fields = ["appId"]
        public var appId: String
        public init(appId: String) { self.appId = appId }
        public init(json: [String: JSON]) throws(WireFieldError) { appId = try WireReader(json).string("appId") }
        public var json: [String: JSON] { ["appId": .string(appId)] }
    }
}
