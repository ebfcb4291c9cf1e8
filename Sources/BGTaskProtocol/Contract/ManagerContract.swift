/// The methods of `io.bgtaskd.Manager` (raw value: the Varlink method name).
public enum ManagerMethod: String, CaseIterable, Sendable, WireMethod {
    case listApps = "ListApps"
    case getApp = "GetApp"
    case listAssertions = "ListAssertions"
    case getSettings = "GetSettings"
    case explain = "Explain"
    case monitor = "Monitor"
    case stats = "Stats"
    case launch = "Launch"
    case foreground = "Foreground"
    case background = "Background"
    case setFocus = "SetFocus"
    case interrupt = "Interrupt"
    case endInterruption = "EndInterruption"
    case terminate = "Terminate"
    case setRefreshPolicy = "SetRefreshPolicy"
    case setGlobalRefresh = "SetGlobalRefresh"
    case setLowPowerMode = "SetLowPowerMode"
    case setConditions = "SetConditions"
    case postNotification = "PostNotification"
    case wakeForRemoteNotification = "WakeForRemoteNotification"
    case runTaskNow = "RunTaskNow"
    case reload = "Reload"
    case hold = "Hold"
    case wakeForBusCall = "WakeForBusCall"
    case listContinuedTasks = "ListContinuedTasks"
    case cancelContinuedTask = "CancelContinuedTask"

    public static let interface = Interfaces.managerName
    public var qualifiedName: String { Self.interface + "." + rawValue }

    /// The method a call names, nil for another interface or an unknown method.
    public init?(_ call: VarlinkCall) {
        guard call.interface == Self.interface[...] else { return nil }
        self.init(rawValue: String(call.methodName))
    }

    /// Open to every local user; the others need root or `ControlGroup=` (SPEC §10).
    public var isReadOnly: Bool {
        switch self {
        case .listApps, .getApp, .listAssertions, .getSettings, .explain, .monitor, .stats, .listContinuedTasks: return true
        default: return false
        }
    }

    public var parametersType: any WireMessage.Type {
        switch self {
        case .listApps, .listAssertions, .getSettings, .monitor, .stats, .reload, .listContinuedTasks: return WireEmpty.self
        case .cancelContinuedTask: return ManagerWire.CancelContinuedTask.self
        case .getApp: return ManagerWire.GetApp.self
        case .explain: return ManagerWire.ExplainCall.self
        case .launch: return ManagerWire.Launch.self
        case .foreground: return ManagerWire.Foreground.self
        case .background: return ManagerWire.BackgroundCall.self
        case .setFocus: return ManagerWire.SetFocus.self
        case .interrupt: return ManagerWire.Interrupt.self
        case .endInterruption: return ManagerWire.EndInterruption.self
        case .terminate: return ManagerWire.Terminate.self
        case .setRefreshPolicy: return ManagerWire.SetRefreshPolicy.self
        case .setGlobalRefresh: return ManagerWire.SetGlobalRefresh.self
        case .setLowPowerMode: return ManagerWire.SetLowPowerMode.self
        case .setConditions: return ManagerWire.SetConditions.self
        case .postNotification: return ManagerWire.PostNotification.self
        case .wakeForRemoteNotification: return ManagerWire.WakeForRemoteNotification.self
        case .runTaskNow: return ManagerWire.RunTaskNow.self
        case .hold: return ManagerWire.Hold.self
        case .wakeForBusCall: return ManagerWire.WakeForBusCall.self
        }
    }

    public var replyType: any WireMessage.Type {
        switch self {
        case .listApps: return ManagerWire.ListAppsReply.self
        case .getApp: return ManagerWire.GetAppReply.self
        case .listAssertions: return ManagerWire.ListAssertionsReply.self
        case .getSettings: return ManagerWire.GetSettingsReply.self
        case .explain: return ManagerWire.ExplainReply.self
        case .monitor: return ManagerWire.MonitorReply.self
        case .stats: return ManagerWire.StatsReply.self
        case .hold: return ManagerWire.HoldReply.self
        case .reload: return ManagerWire.ReloadReply.self
        case .listContinuedTasks: return ManagerWire.ListContinuedTasksReply.self
        case .launch, .foreground, .background, .setFocus, .interrupt, .endInterruption, .terminate, .setRefreshPolicy,
            .setGlobalRefresh, .setLowPowerMode, .setConditions, .postNotification, .wakeForRemoteNotification,
            .runTaskNow, .wakeForBusCall, .cancelContinuedTask:
            return WireEmpty.self
        }
    }
}

/// Parameter, reply and type structs of `io.bgtaskd.Manager`: the types in `ManagerContract+Types.swift`,
/// the parameters in `ManagerContract+Parameters.swift`, the replies in `ManagerContract+Replies.swift`.
public enum ManagerWire: Sendable {}

/// The errors of `io.bgtaskd.Manager` (`error` declarations), each with its parameters.
public enum ManagerError: Error, Sendable, Equatable {
    case noSuchApp(appId: String)
    case permissionDenied
    case notPermitted(identifier: String)
    case unavailable(reason: String)
    case invalidState(state: String)
    case alreadyCheckedIn(appId: String)
    case notCheckedIn(appId: String)
    case modeNotDeclared(mode: String)
    case invalidConfiguration(message: String, file: String?, line: Int64?, key: String?)
    case launchFailed(appId: String, message: String)
    case holdLost(appId: String, reason: String, message: String)

    /// Error names (without the interface) → their parameters, in declaration order.
    public static let declared: [String: [String]] = [
        "NoSuchApp": ["appId"], "PermissionDenied": [], "NotPermitted": ["identifier"], "Unavailable": ["reason"],
        "InvalidState": ["state"], "AlreadyCheckedIn": ["appId"], "NotCheckedIn": ["appId"], "ModeNotDeclared": ["mode"],
        "InvalidConfiguration": ["message", "file", "line", "key"], "LaunchFailed": ["appId", "message"],
        "HoldLost": ["appId", "reason", "message"],
    ]

    public var shortName: String {
        switch self {
        case .noSuchApp: return "NoSuchApp"
        case .permissionDenied: return "PermissionDenied"
        case .notPermitted: return "NotPermitted"
        case .unavailable: return "Unavailable"
        case .invalidState: return "InvalidState"
        case .alreadyCheckedIn: return "AlreadyCheckedIn"
        case .notCheckedIn: return "NotCheckedIn"
        case .modeNotDeclared: return "ModeNotDeclared"
        case .invalidConfiguration: return "InvalidConfiguration"
        case .launchFailed: return "LaunchFailed"
        case .holdLost: return "HoldLost"
        }
    }

    public var parameters: [String: JSON] {
        switch self {
        case .noSuchApp(let a), .alreadyCheckedIn(let a), .notCheckedIn(let a): return ["appId": .string(a)]
        case .permissionDenied: return [:]
        case .notPermitted(let i): return ["identifier": .string(i)]
        case .unavailable(let r): return ["reason": .string(r)]
        case .invalidState(let s): return ["state": .string(s)]
        case .modeNotDeclared(let m): return ["mode": .string(m)]
        case .invalidConfiguration(let message, let file, let line, let key):
            var o: [String: JSON] = ["message": .string(message)]
            o.put("file", file.map { .string($0) })
            o.put("line", line.map { .int($0) })
            o.put("key", key.map { .string($0) })
            return o
        case .launchFailed(let a, let m): return ["appId": .string(a), "message": .string(m)]
        case .holdLost(let a, let r, let m): return ["appId": .string(a), "reason": .string(r), "message": .string(m)]
        }
    }

    /// The error as sent: `io.bgtaskd.Manager.<Name>` with its parameters.
    public var varlinkError: VarlinkError { VarlinkError(ManagerMethod.interface + "." + shortName, parameters) }

    /// The error a reply names; nil for another interface's or an unknown one.
    public init?(_ error: VarlinkError) {
        let prefix = ManagerMethod.interface + "."
        guard error.name.hasPrefix(prefix) else { return nil }
        let r = WireReader(error.parameters)
        func s(_ key: String) -> String { (try? r.string(key)) ?? "" }
        switch String(error.name.dropFirst(prefix.count)) {
        case "NoSuchApp": self = .noSuchApp(appId: s("appId"))
        case "PermissionDenied": self = .permissionDenied
        case "NotPermitted": self = .notPermitted(identifier: s("identifier"))
        case "Unavailable": self = .unavailable(reason: s("reason"))
        case "InvalidState": self = .invalidState(state: s("state"))
        case "AlreadyCheckedIn": self = .alreadyCheckedIn(appId: s("appId"))
        case "NotCheckedIn": self = .notCheckedIn(appId: s("appId"))
        case "ModeNotDeclared": self = .modeNotDeclared(mode: s("mode"))
        case "InvalidConfiguration":
            self = .invalidConfiguration(
                message: s("message"), file: try? r.optionalString("file"), line: (try? r.optionalInt("line")) ?? nil,
                key: (try? r.optionalString("key")) ?? nil)
        case "LaunchFailed": self = .launchFailed(appId: s("appId"), message: s("message"))
        case "HoldLost": self = .holdLost(appId: s("appId"), reason: s("reason"), message: s("message"))
        default: return nil
        }
    }
}
