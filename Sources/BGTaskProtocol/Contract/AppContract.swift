public import BGTaskModel

/// The methods of `io.bgtaskd.App` (raw value: the Varlink method name).
public enum AppMethod: String, CaseIterable, Sendable, WireMethod {
    case checkIn = "CheckIn"
    case acknowledge = "Acknowledge"
    case beginBackgroundTask = "BeginBackgroundTask"
    case endBackgroundTask = "EndBackgroundTask"
    case backgroundTimeRemaining = "BackgroundTimeRemaining"
    case beginActivity = "BeginActivity"
    case endActivity = "EndActivity"
    case submitTaskRequest = "SubmitTaskRequest"
    case cancelTaskRequest = "CancelTaskRequest"
    case cancelAllTaskRequests = "CancelAllTaskRequests"
    case pendingTaskRequests = "PendingTaskRequests"
    case completeTask = "CompleteTask"
    case refreshStatus = "RefreshStatus"

    public static let interface = Interfaces.appName
    public var qualifiedName: String { Self.interface + "." + rawValue }

    /// The method a call names, nil for another interface or an unknown method.
    public init?(_ call: VarlinkCall) {
        if let known = call.appMethod {
            self = known
            return
        }
        guard call.interface == Self.interface[...] else { return nil }
        self.init(rawValue: String(call.methodName))
    }

    public var parametersType: any WireMessage.Type {
        switch self {
        case .checkIn: return AppWire.CheckIn.self
        case .acknowledge: return AppWire.Acknowledge.self
        case .beginBackgroundTask: return AppWire.BeginBackgroundTask.self
        case .endBackgroundTask: return AppWire.EndBackgroundTask.self
        case .backgroundTimeRemaining: return AppWire.BackgroundTimeRemaining.self
        case .beginActivity: return AppWire.BeginActivity.self
        case .endActivity: return AppWire.EndActivity.self
        case .submitTaskRequest: return AppWire.SubmitTaskRequest.self
        case .cancelTaskRequest: return AppWire.CancelTaskRequest.self
        case .cancelAllTaskRequests: return AppWire.CancelAllTaskRequests.self
        case .pendingTaskRequests: return AppWire.PendingTaskRequests.self
        case .completeTask: return AppWire.CompleteTask.self
        case .refreshStatus: return AppWire.RefreshStatusCall.self
        }
    }

    public var replyType: any WireMessage.Type {
        switch self {
        case .checkIn: return AppWire.CheckInReply.self
        case .beginBackgroundTask: return AppWire.BeginBackgroundTaskReply.self
        case .backgroundTimeRemaining: return AppWire.BackgroundTimeRemainingReply.self
        case .beginActivity: return AppWire.BeginActivityReply.self
        case .pendingTaskRequests: return AppWire.PendingTaskRequestsReply.self
        case .refreshStatus: return AppWire.RefreshStatusReply.self
        case .acknowledge, .endBackgroundTask, .endActivity, .submitTaskRequest, .cancelTaskRequest,
            .cancelAllTaskRequests, .completeTask:
            return WireEmpty.self
        }
    }
}

/// Parameter, reply and type structs of `io.bgtaskd.App`.
public enum AppWire: Sendable {
    /// A call that names only the app.
    public protocol AppOnly: WireAppNamed {
        var appId: String { get }
        init(appId: String)
    }

    // MARK: Types

    /// `type Event`: one lifecycle event of the CheckIn stream. Optional fields are left out when absent.
    public struct Event: WireMessage {
        public static let fields = [
            "id", "kind", "state", "needsAck", "taskId", "taskName", "identifier", "name", "payload", "launchReason",
            "deadlineUSec",
        ]
        public var id: Int64
        public var kind: LifecycleEventKind
        public var state: AppState
        public var needsAck: Bool
        public var taskId: Int64?
        public var taskName: String?
        public var identifier: String?
        public var name: String?
        /// A JSON object.
        public var payload: JSON?
        public var launchReason: LaunchReason?
        public var deadlineUSec: Int64?

        public init(
            id: Int64, kind: LifecycleEventKind, state: AppState, needsAck: Bool, taskId: Int64? = nil,
            taskName: String? = nil, identifier: String? = nil, name: String? = nil, payload: JSON? = nil,
            launchReason: LaunchReason? = nil, deadlineUSec: Int64? = nil
        ) {
            self.id = id
            self.kind = kind
            self.state = state
            self.needsAck = needsAck
            self.taskId = taskId
            self.taskName = taskName
            self.identifier = identifier
            self.name = name
            self.payload = payload
            self.launchReason = launchReason
            self.deadlineUSec = deadlineUSec
        }

        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(
                id: try r.int("id"), kind: try r.value("kind"), state: try r.value("state"), needsAck: try r.bool("needsAck"),
                taskId: try r.optionalInt("taskId"), taskName: try r.optionalString("taskName"),
                identifier: try r.optionalString("identifier"), name: try r.optionalString("name"),
                payload: try r.optionalObject("payload"), launchReason: try r.optionalValue("launchReason"),
                deadlineUSec: try r.optionalInt("deadlineUSec"))
        }

        public var json: [String: JSON] {
            var o: [String: JSON] = ["id": .int(id), "kind": .raw(kind), "state": .raw(state), "needsAck": .bool(needsAck)]
            o.put("taskId", taskId.map { .int($0) })
            o.put("taskName", taskName.map { .string($0) })
            o.put("identifier", identifier.map { .string($0) })
            o.put("name", name.map { .string($0) })
            o.put("payload", payload)
            o.put("launchReason", launchReason.map { .raw($0) })
            o.put("deadlineUSec", deadlineUSec.map { .int($0) })
            return o
        }

        /// Keys in sorted order, as `JSON.write` puts them, from preformatted parts.
        public func write(into out: inout [UInt8]) {
            out.append(UInt8(ascii: "{"))
            if let deadlineUSec {
                out.append(contentsOf: #""deadlineUSec":"#.utf8)
                JSON.writeInt(deadlineUSec, into: &out)
                out.append(UInt8(ascii: ","))
            }
            out.append(contentsOf: #""id":"#.utf8)
            JSON.writeInt(id, into: &out)
            if let identifier {
                out.append(contentsOf: #","identifier":"#.utf8)
                JSON.writeString(identifier, into: &out)
            }
            out.append(contentsOf: #","kind":"#.utf8)
            JSON.writeString(kind.rawValue, into: &out)
            if let launchReason {
                out.append(contentsOf: #","launchReason":"#.utf8)
                JSON.writeString(launchReason.rawValue, into: &out)
            }
            if let name {
                out.append(contentsOf: #","name":"#.utf8)
                JSON.writeString(name, into: &out)
            }
            out.append(contentsOf: needsAck ? #","needsAck":true"#.utf8 : #","needsAck":false"#.utf8)
            if let payload {
                out.append(contentsOf: #","payload":"#.utf8)
                payload.write(into: &out)
            }
            out.append(contentsOf: #","state":"#.utf8)
            JSON.writeString(state.rawValue, into: &out)
            if let taskId {
                out.append(contentsOf: #","taskId":"#.utf8)
                JSON.writeInt(taskId, into: &out)
            }
            if let taskName {
                out.append(contentsOf: #","taskName":"#.utf8)
                JSON.writeString(taskName, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// `type TaskRequest`: a pending scheduled task request.
    public struct TaskRequest: WireMessage {
        public static let fields = ["identifier", "kind", "earliestBeginUSec", "requiresNetwork", "requiresExternalPower"]
        public var identifier: String
        public var kind: TaskKind
        public var earliestBeginUSec: Int64?
        public var requiresNetwork: Bool
        public var requiresExternalPower: Bool

        public init(identifier: String, kind: TaskKind, earliestBeginUSec: Int64?, requiresNetwork: Bool, requiresExternalPower: Bool) {
            self.identifier = identifier
            self.kind = kind
            self.earliestBeginUSec = earliestBeginUSec
            self.requiresNetwork = requiresNetwork
            self.requiresExternalPower = requiresExternalPower
        }

        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(
                identifier: try r.string("identifier"), kind: try r.value("kind"),
                earliestBeginUSec: try r.optionalInt("earliestBeginUSec"), requiresNetwork: try r.bool("requiresNetwork"),
                requiresExternalPower: try r.bool("requiresExternalPower"))
        }

        public var json: [String: JSON] {
            var o: [String: JSON] = [
                "identifier": .string(identifier), "kind": .raw(kind), "requiresNetwork": .bool(requiresNetwork),
                "requiresExternalPower": .bool(requiresExternalPower),
            ]
            o.put("earliestBeginUSec", earliestBeginUSec.map { .int($0) })
            return o
        }
    }

    // MARK: Parameters

    public struct CheckIn: AppOnly {
        public static let fields = ["appId"]
        public var appId: String
        public init(appId: String) { self.appId = appId }
        public init(json: [String: JSON]) throws(WireFieldError) { appId = try WireReader(json).string("appId") }
        public var json: [String: JSON] { ["appId": .string(appId)] }
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

    // MARK: Replies

    /// A reply of the CheckIn stream: the first carries no event, every later one exactly one. The
    /// daemon leaves `refreshStatus` out of event replies.
    public struct CheckInReply: WireMessage {
        public static let fields = ["state", "refreshStatus", "event"]
        public var state: AppState
        public var refreshStatus: RefreshStatus?
        public var event: Event?
        public init(state: AppState, refreshStatus: RefreshStatus?, event: Event?) {
            self.state = state
            self.refreshStatus = refreshStatus
            self.event = event
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(state: try r.value("state"), refreshStatus: try r.optionalValue("refreshStatus"), event: try r.optionalMessage("event"))
        }
        public var json: [String: JSON] {
            var o: [String: JSON] = ["state": .raw(state)]
            o.put("refreshStatus", refreshStatus.map { .raw($0) })
            o.put("event", event.map { .object($0.json) })
            return o
        }
        /// Keys in sorted order (event, refreshStatus, state), as `JSON.write` puts them.
        public func write(into out: inout [UInt8]) {
            out.append(UInt8(ascii: "{"))
            if let event {
                out.append(contentsOf: #""event":"#.utf8)
                event.write(into: &out)
                out.append(UInt8(ascii: ","))
            }
            if let refreshStatus {
                out.append(contentsOf: #""refreshStatus":"#.utf8)
                JSON.writeString(refreshStatus.rawValue, into: &out)
                out.append(UInt8(ascii: ","))
            }
            out.append(contentsOf: #""state":"#.utf8)
            JSON.writeString(state.rawValue, into: &out)
            out.append(UInt8(ascii: "}"))
        }
    }

    public struct BeginBackgroundTaskReply: WireMessage {
        public static let fields = ["taskId"]
        /// 0: denied.
        public var taskId: Int64
        public init(taskId: Int64) { self.taskId = taskId }
        public init(json: [String: JSON]) throws(WireFieldError) { taskId = try WireReader(json).int("taskId") }
        public var json: [String: JSON] { ["taskId": .int(taskId)] }
        public func write(into out: inout [UInt8]) {
            out.append(contentsOf: #"{"taskId":"#.utf8)
            JSON.writeInt(taskId, into: &out)
            out.append(UInt8(ascii: "}"))
        }
    }

    public struct BackgroundTimeRemainingReply: WireMessage {
        public static let fields = ["remainingUSec"]
        /// nil (null on the wire): in the foreground, unlimited.
        public var remainingUSec: Int64?
        public init(remainingUSec: Int64?) { self.remainingUSec = remainingUSec }
        public init(json: [String: JSON]) throws(WireFieldError) { remainingUSec = try WireReader(json).optionalInt("remainingUSec") }
        public var json: [String: JSON] { ["remainingUSec": .orNull(remainingUSec)] }
    }

    public struct BeginActivityReply: WireMessage {
        public static let fields = ["activityId"]
        public var activityId: Int64
        public init(activityId: Int64) { self.activityId = activityId }
        public init(json: [String: JSON]) throws(WireFieldError) { activityId = try WireReader(json).int("activityId") }
        public var json: [String: JSON] { ["activityId": .int(activityId)] }
        public func write(into out: inout [UInt8]) {
            out.append(contentsOf: #"{"activityId":"#.utf8)
            JSON.writeInt(activityId, into: &out)
            out.append(UInt8(ascii: "}"))
        }
    }

    public struct PendingTaskRequestsReply: WireMessage {
        public static let fields = ["requests"]
        public var requests: [TaskRequest]
        public init(requests: [TaskRequest]) { self.requests = requests }
        public init(json: [String: JSON]) throws(WireFieldError) { requests = try WireReader(json).messages("requests") }
        public var json: [String: JSON] { ["requests": .array(requests.map { .object($0.json) })] }
    }

    public struct RefreshStatusReply: WireMessage {
        public static let fields = ["status"]
        public var status: RefreshStatus
        public init(status: RefreshStatus) { self.status = status }
        public init(json: [String: JSON]) throws(WireFieldError) { status = try WireReader(json).value("status") }
        public var json: [String: JSON] { ["status": .raw(status)] }
    }
}

/// The errors of `io.bgtaskd.App` (`error` declarations), each with its parameters.
public enum AppError: Error, Sendable, Equatable {
    case noSuchApp(appId: String)
    case permissionDenied
    case notCheckedIn(appId: String)
    case alreadyCheckedIn(appId: String)
    case noSuchEvent(eventId: Int64)
    case notPermitted(identifier: String)
    case tooManyPendingTaskRequests(kind: String)
    case unavailable(reason: String)
    case modeNotDeclared(mode: String)
    case modeNotContinuous(mode: String)
    case invalidState(state: String)

    /// Error names (without the interface) → their parameters, in declaration order.
    public static let declared: [String: [String]] = [
        "NoSuchApp": ["appId"], "PermissionDenied": [], "NotCheckedIn": ["appId"], "AlreadyCheckedIn": ["appId"],
        "NoSuchEvent": ["eventId"], "NotPermitted": ["identifier"], "TooManyPendingTaskRequests": ["kind"],
        "Unavailable": ["reason"], "ModeNotDeclared": ["mode"], "ModeNotContinuous": ["mode"], "InvalidState": ["state"],
    ]

    /// The error's name without the interface.
    public var shortName: String {
        switch self {
        case .noSuchApp: return "NoSuchApp"
        case .permissionDenied: return "PermissionDenied"
        case .notCheckedIn: return "NotCheckedIn"
        case .alreadyCheckedIn: return "AlreadyCheckedIn"
        case .noSuchEvent: return "NoSuchEvent"
        case .notPermitted: return "NotPermitted"
        case .tooManyPendingTaskRequests: return "TooManyPendingTaskRequests"
        case .unavailable: return "Unavailable"
        case .modeNotDeclared: return "ModeNotDeclared"
        case .modeNotContinuous: return "ModeNotContinuous"
        case .invalidState: return "InvalidState"
        }
    }

    public var parameters: [String: JSON] {
        switch self {
        case .noSuchApp(let a), .notCheckedIn(let a), .alreadyCheckedIn(let a): return ["appId": .string(a)]
        case .permissionDenied: return [:]
        case .noSuchEvent(let e): return ["eventId": .int(e)]
        case .notPermitted(let i): return ["identifier": .string(i)]
        case .tooManyPendingTaskRequests(let k): return ["kind": .string(k)]
        case .unavailable(let r): return ["reason": .string(r)]
        case .modeNotDeclared(let m), .modeNotContinuous(let m): return ["mode": .string(m)]
        case .invalidState(let s): return ["state": .string(s)]
        }
    }

    /// The error as sent: `io.bgtaskd.App.<Name>` with its parameters.
    public var varlinkError: VarlinkError { VarlinkError(AppMethod.interface + "." + shortName, parameters) }

    /// The error a reply names; nil for another interface's or an unknown one (a newer daemon's).
    public init?(_ error: VarlinkError) {
        let prefix = AppMethod.interface + "."
        guard error.name.hasPrefix(prefix) else { return nil }
        let r = WireReader(error.parameters)
        func s(_ key: String) -> String { (try? r.string(key)) ?? "" }
        switch String(error.name.dropFirst(prefix.count)) {
        case "NoSuchApp": self = .noSuchApp(appId: s("appId"))
        case "PermissionDenied": self = .permissionDenied
        case "NotCheckedIn": self = .notCheckedIn(appId: s("appId"))
        case "AlreadyCheckedIn": self = .alreadyCheckedIn(appId: s("appId"))
        case "NoSuchEvent": self = .noSuchEvent(eventId: (try? r.int("eventId")) ?? 0)
        case "NotPermitted": self = .notPermitted(identifier: s("identifier"))
        case "TooManyPendingTaskRequests": self = .tooManyPendingTaskRequests(kind: s("kind"))
        case "Unavailable": self = .unavailable(reason: s("reason"))
        case "ModeNotDeclared": self = .modeNotDeclared(mode: s("mode"))
        case "ModeNotContinuous": self = .modeNotContinuous(mode: s("mode"))
        case "InvalidState": self = .invalidState(state: s("state"))
        default: return nil
        }
    }
}
