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
    case beginContinuedTask = "BeginContinuedTask"
    case updateTaskProgress = "UpdateTaskProgress"

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
        case .beginContinuedTask: return AppWire.BeginContinuedTask.self
        case .updateTaskProgress: return AppWire.UpdateTaskProgress.self
        }
    }

    public var replyType: any WireMessage.Type {
        switch self {
        case .checkIn: return AppWire.CheckInReply.self
        case .beginBackgroundTask, .beginContinuedTask: return AppWire.BeginBackgroundTaskReply.self
        case .backgroundTimeRemaining: return AppWire.BackgroundTimeRemainingReply.self
        case .beginActivity: return AppWire.BeginActivityReply.self
        case .pendingTaskRequests: return AppWire.PendingTaskRequestsReply.self
        case .refreshStatus: return AppWire.RefreshStatusReply.self
        case .acknowledge, .endBackgroundTask, .endActivity, .submitTaskRequest, .cancelTaskRequest,
            .cancelAllTaskRequests, .completeTask, .updateTaskProgress:
            return WireEmpty.self
        }
    }
}

/// Parameter, reply and type structs of `io.bgtaskd.App`: the types in `AppContract+Types.swift`, the
/// parameters in `AppContract+Parameters.swift`, the replies in `AppContract+Replies.swift`.
public enum AppWire: Sendable {
    /// A call that names only the app.
    public protocol AppOnly: WireAppNamed {
        var appId: String { get }
        init(appId: String)
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
