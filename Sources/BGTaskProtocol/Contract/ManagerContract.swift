public import BGTaskModel

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
        case .listApps, .getApp, .listAssertions, .getSettings, .explain, .monitor, .stats: return true
        default: return false
        }
    }

    public var parametersType: any WireMessage.Type {
        switch self {
        case .listApps, .listAssertions, .getSettings, .monitor, .stats, .reload: return WireEmpty.self
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
        case .launch, .foreground, .background, .setFocus, .interrupt, .endInterruption, .terminate, .setRefreshPolicy,
            .setGlobalRefresh, .setLowPowerMode, .setConditions, .postNotification, .wakeForRemoteNotification,
            .runTaskNow, .wakeForBusCall:
            return WireEmpty.self
        }
    }
}

/// Parameter, reply and type structs of `io.bgtaskd.Manager`.
public enum ManagerWire: Sendable {
    // MARK: Types

    /// `type Assertion`: a live background task or manager hold.
    public struct Assertion: WireMessage {
        public static let fields = ["taskId", "appId", "name", "remainingUSec", "expiring", "managerHold"]
        public var taskId: Int64
        public var appId: String
        public var name: String?
        /// nil (null): no time limit.
        public var remainingUSec: Int64?
        public var expiring: Bool
        public var managerHold: Bool
        public init(taskId: Int64, appId: String, name: String?, remainingUSec: Int64?, expiring: Bool, managerHold: Bool) {
            self.taskId = taskId
            self.appId = appId
            self.name = name
            self.remainingUSec = remainingUSec
            self.expiring = expiring
            self.managerHold = managerHold
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(
                taskId: try r.int("taskId"), appId: try r.string("appId"), name: try r.optionalString("name"),
                remainingUSec: try r.optionalInt("remainingUSec"), expiring: try r.bool("expiring"),
                managerHold: try r.optionalBool("managerHold") ?? false)
        }
        public var json: [String: JSON] {
            [
                "taskId": .int(taskId), "appId": .string(appId), "name": .orNull(name), "remainingUSec": .orNull(remainingUSec),
                "expiring": .bool(expiring), "managerHold": .bool(managerHold),
            ]
        }
    }

    /// `type Activity`: a continuous background mode being held.
    public struct Activity: WireMessage {
        public static let fields = ["activityId", "appId", "mode"]
        public var activityId: Int64
        public var appId: String
        public var mode: WireEnum<BackgroundMode>
        public init(activityId: Int64, appId: String, mode: BackgroundMode) {
            self.activityId = activityId
            self.appId = appId
            self.mode = WireEnum(mode)
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            activityId = try r.int("activityId")
            appId = try r.string("appId")
            mode = try r.value("mode")
        }
        public var json: [String: JSON] { ["activityId": .int(activityId), "appId": .string(appId), "mode": .raw(mode)] }
    }

    /// `type Decision`: one recorded decision, as journaled.
    public struct Decision: WireMessage {
        public static let fields = ["realtimeUSec", "appId", "decision", "reason", "message"]
        public var realtimeUSec: Int64
        public var appId: String?
        public var decision: WireEnum<DecisionKind>
        public var reason: WireEnum<Reason>
        public var message: String
        public init(realtimeUSec: Int64, appId: String?, decision: DecisionKind, reason: Reason, message: String) {
            self.realtimeUSec = realtimeUSec
            self.appId = appId
            self.decision = WireEnum(decision)
            self.reason = WireEnum(reason)
            self.message = message
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            realtimeUSec = try r.int("realtimeUSec")
            appId = try r.optionalString("appId")
            decision = try r.value("decision")
            reason = try r.value("reason")
            message = try r.string("message")
        }
        public var json: [String: JSON] {
            [
                "realtimeUSec": .int(realtimeUSec), "appId": .orNull(appId), "decision": .raw(decision), "reason": .raw(reason),
                "message": .string(message),
            ]
        }
    }

    /// `type AppInfo`: an app as `ListApps`/`GetApp` show it.
    public struct AppInfo: WireMessage {
        public static let fields = [
            "appId", "name", "state", "pid", "uid", "lifecycleAware", "assertions", "activities", "refreshSetting",
            "refreshStatus", "backgroundTimeRemainingUSec", "pendingTaskRequests", "lastDecision", "refreshStatusReason",
            "lastForegroundUSec",
        ]
        public var appId: String
        public var name: String
        public var state: WireEnum<AppState>
        public var pid: Int64?
        public var uid: Int64?
        public var lifecycleAware: Bool
        public var assertions: [Assertion]
        public var activities: [Activity]
        /// The app's own Background App Refresh setting.
        public var refreshSetting: Bool
        public var refreshStatus: WireEnum<RefreshStatus>
        public var backgroundTimeRemainingUSec: Int64?
        public var pendingTaskRequests: Int64
        public var lastDecision: Decision?
        public var refreshStatusReason: WireEnum<Reason>?
        public var lastForegroundUSec: Int64?

        public init(
            appId: String, name: String, state: AppState, pid: Int64?, uid: Int64?, lifecycleAware: Bool,
            assertions: [Assertion], activities: [Activity], refreshSetting: Bool, refreshStatus: RefreshStatus,
            backgroundTimeRemainingUSec: Int64?, pendingTaskRequests: Int64, lastDecision: Decision?,
            refreshStatusReason: Reason?, lastForegroundUSec: Int64?
        ) {
            self.appId = appId
            self.name = name
            self.state = WireEnum(state)
            self.pid = pid
            self.uid = uid
            self.lifecycleAware = lifecycleAware
            self.assertions = assertions
            self.activities = activities
            self.refreshSetting = refreshSetting
            self.refreshStatus = WireEnum(refreshStatus)
            self.backgroundTimeRemainingUSec = backgroundTimeRemainingUSec
            self.pendingTaskRequests = pendingTaskRequests
            self.lastDecision = lastDecision
            self.refreshStatusReason = refreshStatusReason.map(WireEnum.init)
            self.lastForegroundUSec = lastForegroundUSec
        }

        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            let setting = try r.string("refreshSetting")
            guard setting == "on" || setting == "off" else { throw WireFieldError("refreshSetting") }
            appId = try r.string("appId")
            name = try r.string("name")
            state = try r.value("state")
            pid = try r.optionalInt("pid")
            uid = try r.optionalInt("uid")
            lifecycleAware = try r.bool("lifecycleAware")
            assertions = try r.messages("assertions")
            activities = try r.messages("activities")
            refreshSetting = setting == "on"
            refreshStatus = try r.value("refreshStatus")
            backgroundTimeRemainingUSec = try r.optionalInt("backgroundTimeRemainingUSec")
            pendingTaskRequests = try r.int("pendingTaskRequests")
            lastDecision = try r.optionalMessage("lastDecision")
            refreshStatusReason = try r.optionalValue("refreshStatusReason")
            lastForegroundUSec = try r.optionalInt("lastForegroundUSec")
        }

        public var json: [String: JSON] {
            [
                "appId": .string(appId), "name": .string(name), "state": .raw(state), "pid": .orNull(pid), "uid": .orNull(uid),
                "lifecycleAware": .bool(lifecycleAware), "assertions": .array(assertions.map { .object($0.json) }),
                "activities": .array(activities.map { .object($0.json) }), "refreshSetting": .string(refreshSetting ? "on" : "off"),
                "refreshStatus": .raw(refreshStatus), "backgroundTimeRemainingUSec": .orNull(backgroundTimeRemainingUSec),
                "pendingTaskRequests": .int(pendingTaskRequests), "lastDecision": lastDecision.map { .object($0.json) } ?? .null,
                "refreshStatusReason": refreshStatusReason.map { .raw($0) } ?? .null,
                "lastForegroundUSec": .orNull(lastForegroundUSec),
            ]
        }
    }

    /// `type Settings`: the daemon's settings and the conditions in force.
    public struct Settings: WireMessage {
        public static let fields = [
            "backgroundAppRefresh", "lowPowerMode", "onExternalPower", "network", "freezerBackend", "socket",
            "didEnterBackgroundTimeoutUSec", "backgroundTimeBudgetUSec", "expirationWarningUSec", "maxBackgroundTasksPerApp",
            "launchTimeoutUSec", "killTimeoutUSec", "freezerBackendReason", "dryRun",
        ]
        public var backgroundAppRefresh: WireEnum<RefreshMode>
        public var lowPowerMode: Bool
        public var onExternalPower: Bool
        public var network: WireEnum<NetworkCondition>
        public var freezerBackend: String
        public var socket: String
        public var didEnterBackgroundTimeoutUSec: Int64
        public var backgroundTimeBudgetUSec: Int64
        public var expirationWarningUSec: Int64
        public var maxBackgroundTasksPerApp: Int64
        public var launchTimeoutUSec: Int64
        public var killTimeoutUSec: Int64
        public var freezerBackendReason: String?
        public var dryRun: Bool?

        public init(
            backgroundAppRefresh: RefreshMode, lowPowerMode: Bool, onExternalPower: Bool, network: NetworkCondition,
            freezerBackend: String, socket: String, didEnterBackgroundTimeoutUSec: Int64, backgroundTimeBudgetUSec: Int64,
            expirationWarningUSec: Int64, maxBackgroundTasksPerApp: Int64, launchTimeoutUSec: Int64, killTimeoutUSec: Int64,
            freezerBackendReason: String?, dryRun: Bool?
        ) {
            self.backgroundAppRefresh = WireEnum(backgroundAppRefresh)
            self.lowPowerMode = lowPowerMode
            self.onExternalPower = onExternalPower
            self.network = WireEnum(network)
            self.freezerBackend = freezerBackend
            self.socket = socket
            self.didEnterBackgroundTimeoutUSec = didEnterBackgroundTimeoutUSec
            self.backgroundTimeBudgetUSec = backgroundTimeBudgetUSec
            self.expirationWarningUSec = expirationWarningUSec
            self.maxBackgroundTasksPerApp = maxBackgroundTasksPerApp
            self.launchTimeoutUSec = launchTimeoutUSec
            self.killTimeoutUSec = killTimeoutUSec
            self.freezerBackendReason = freezerBackendReason
            self.dryRun = dryRun
        }

        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            backgroundAppRefresh = try r.value("backgroundAppRefresh")
            lowPowerMode = try r.bool("lowPowerMode")
            onExternalPower = try r.bool("onExternalPower")
            network = try r.value("network")
            freezerBackend = try r.string("freezerBackend")
            socket = try r.string("socket")
            didEnterBackgroundTimeoutUSec = try r.int("didEnterBackgroundTimeoutUSec")
            backgroundTimeBudgetUSec = try r.int("backgroundTimeBudgetUSec")
            expirationWarningUSec = try r.int("expirationWarningUSec")
            maxBackgroundTasksPerApp = try r.int("maxBackgroundTasksPerApp")
            launchTimeoutUSec = try r.int("launchTimeoutUSec")
            killTimeoutUSec = try r.int("killTimeoutUSec")
            freezerBackendReason = try r.optionalString("freezerBackendReason")
            dryRun = try r.optionalBool("dryRun")
        }

        public var json: [String: JSON] {
            var o: [String: JSON] = [
                "backgroundAppRefresh": .raw(backgroundAppRefresh), "lowPowerMode": .bool(lowPowerMode),
                "onExternalPower": .bool(onExternalPower), "network": .raw(network), "freezerBackend": .string(freezerBackend),
                "socket": .string(socket), "didEnterBackgroundTimeoutUSec": .int(didEnterBackgroundTimeoutUSec),
                "backgroundTimeBudgetUSec": .int(backgroundTimeBudgetUSec), "expirationWarningUSec": .int(expirationWarningUSec),
                "maxBackgroundTasksPerApp": .int(maxBackgroundTasksPerApp), "launchTimeoutUSec": .int(launchTimeoutUSec),
                "killTimeoutUSec": .int(killTimeoutUSec),
            ]
            o.put("freezerBackendReason", freezerBackendReason.map { .string($0) })
            o.put("dryRun", dryRun.map { .bool($0) })
            return o
        }
    }

    /// `type DaemonStats`.
    public struct DaemonStats: WireMessage {
        public static let fields = [
            "uptimeUSec", "apps", "connections", "calls", "decisions", "liveAssertions", "journalEntries", "journalDropped",
            "freezerBackend", "freezerBackendReason", "dryRun", "journalCoalesced", "journalSummaries", "connectionsRefused",
            "connectionsTimedOut", "connectionsOversized", "connectionsPaused",
            "systemSleep", "systemSleepReason", "idleInhibited", "sleepsSeen",
        ]
        public var uptimeUSec: Int64
        public var apps: Int64
        public var connections: Int64
        public var calls: Int64
        public var decisions: Int64
        public var liveAssertions: Int64
        public var journalEntries: Int64
        public var journalDropped: Int64
        public var freezerBackend: String?
        public var freezerBackendReason: String?
        public var dryRun: Bool?
        /// `grant`/`end` decisions the journal budget counted in a summary instead of journaling them one by one.
        public var journalCoalesced: Int64?
        /// `coalesced` summaries journaled.
        public var journalSummaries: Int64?
        /// Connections refused at once: a uid at `MaxConnectionsPerUser=`, or no descriptor left for them.
        public var connectionsRefused: Int64?
        /// Connections dropped for a message left half-sent (`IncompleteMessageTimeoutSec=`).
        public var connectionsTimedOut: Int64?
        /// Connections closed for a message over `MaxMessageSize`.
        public var connectionsOversized: Int64?
        /// Connections not read until the interval's end after a call of theirs was denied past the denial
        /// budget (`JournalDenialBurst=`, `JournalDenialGlobalBurst=`).
        public var connectionsPaused: Int64?
        /// SPEC §14: `logind` (the idle inhibitor and the sleep watch are in force) or `off`.
        public var systemSleep: String?
        /// Why `systemSleep` is what it is (no system bus, no logind, …).
        public var systemSleepReason: String?
        /// Whether logind's `idle` inhibitor is held now (live background work).
        public var idleInhibited: Bool?
        /// `PrepareForSleep(true)` signals seen since the start.
        public var sleepsSeen: Int64?

        /// The counters; the five added for issue 11 are optional on the wire (an older daemon has none).
        public init(
            uptimeUSec: Int64, apps: Int64, connections: Int64, calls: Int64, decisions: Int64, liveAssertions: Int64,
            journalEntries: Int64, journalDropped: Int64, freezerBackend: String?, freezerBackendReason: String?, dryRun: Bool?,
            journalCoalesced: Int64? = nil, journalSummaries: Int64? = nil, connectionsRefused: Int64? = nil,
            connectionsTimedOut: Int64? = nil, connectionsOversized: Int64? = nil, connectionsPaused: Int64? = nil,
            systemSleep: String? = nil, systemSleepReason: String? = nil, idleInhibited: Bool? = nil, sleepsSeen: Int64? = nil
        ) {
            self.uptimeUSec = uptimeUSec
            self.apps = apps
            self.connections = connections
            self.calls = calls
            self.decisions = decisions
            self.liveAssertions = liveAssertions
            self.journalEntries = journalEntries
            self.journalDropped = journalDropped
            self.freezerBackend = freezerBackend
            self.freezerBackendReason = freezerBackendReason
            self.dryRun = dryRun
            self.journalCoalesced = journalCoalesced
            self.journalSummaries = journalSummaries
            self.connectionsRefused = connectionsRefused
            self.connectionsTimedOut = connectionsTimedOut
            self.connectionsOversized = connectionsOversized
            self.connectionsPaused = connectionsPaused
            self.systemSleep = systemSleep
            self.systemSleepReason = systemSleepReason
            self.idleInhibited = idleInhibited
            self.sleepsSeen = sleepsSeen
        }

        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(
                uptimeUSec: try r.int("uptimeUSec"), apps: try r.int("apps"), connections: try r.int("connections"),
                calls: try r.int("calls"), decisions: try r.int("decisions"), liveAssertions: try r.int("liveAssertions"),
                journalEntries: try r.int("journalEntries"), journalDropped: try r.int("journalDropped"),
                freezerBackend: try r.optionalString("freezerBackend"), freezerBackendReason: try r.optionalString("freezerBackendReason"),
                dryRun: try r.optionalBool("dryRun"), journalCoalesced: try r.optionalInt("journalCoalesced"),
                journalSummaries: try r.optionalInt("journalSummaries"), connectionsRefused: try r.optionalInt("connectionsRefused"),
                connectionsTimedOut: try r.optionalInt("connectionsTimedOut"),
                connectionsOversized: try r.optionalInt("connectionsOversized"),
                connectionsPaused: try r.optionalInt("connectionsPaused"),
                systemSleep: try r.optionalString("systemSleep"), systemSleepReason: try r.optionalString("systemSleepReason"),
                idleInhibited: try r.optionalBool("idleInhibited"), sleepsSeen: try r.optionalInt("sleepsSeen"))
        }

        public var json: [String: JSON] {
            var o: [String: JSON] = [
                "uptimeUSec": .int(uptimeUSec), "apps": .int(apps), "connections": .int(connections), "calls": .int(calls),
                "decisions": .int(decisions), "liveAssertions": .int(liveAssertions), "journalEntries": .int(journalEntries),
                "journalDropped": .int(journalDropped),
            ]
            o.put("freezerBackend", freezerBackend.map { .string($0) })
            o.put("freezerBackendReason", freezerBackendReason.map { .string($0) })
            o.put("dryRun", dryRun.map { .bool($0) })
            o.put("journalCoalesced", journalCoalesced.map { .int($0) })
            o.put("journalSummaries", journalSummaries.map { .int($0) })
            o.put("connectionsRefused", connectionsRefused.map { .int($0) })
            o.put("connectionsTimedOut", connectionsTimedOut.map { .int($0) })
            o.put("connectionsOversized", connectionsOversized.map { .int($0) })
            o.put("connectionsPaused", connectionsPaused.map { .int($0) })
            o.put("systemSleep", systemSleep.map { .string($0) })
            o.put("systemSleepReason", systemSleepReason.map { .string($0) })
            o.put("idleInhibited", idleInhibited.map { .bool($0) })
            o.put("sleepsSeen", sleepsSeen.map { .int($0) })
            return o
        }
    }

    // MARK: Parameters

    /// A call that names only the app.
    public protocol AppOnly: WireMessage {
        var appId: String { get }
        init(appId: String)
    }

    public struct GetApp: AppOnly {
        public static let fields = ["appId"]
        public var appId: String
        public init(appId: String) { self.appId = appId }
        public init(json: [String: JSON]) throws(WireFieldError) { appId = try WireReader(json).string("appId") }
        public var json: [String: JSON] { ["appId": .string(appId)] }
    }

    /// `Explain`'s parameters.
    public struct ExplainCall: AppOnly {
        public static let fields = ["appId"]
        public var appId: String
        public init(appId: String) { self.appId = appId }
        public init(json: [String: JSON]) throws(WireFieldError) { appId = try WireReader(json).string("appId") }
        public var json: [String: JSON] { ["appId": .string(appId)] }
    }

    public struct Launch: WireMessage {
        public static let fields = ["appId", "background"]
        public var appId: String
        public var background: Bool?
        public init(appId: String, background: Bool? = nil) {
            self.appId = appId
            self.background = background
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(appId: try r.string("appId"), background: try r.optionalBool("background"))
        }
        public var json: [String: JSON] {
            var o: [String: JSON] = ["appId": .string(appId)]
            o.put("background", background.map { .bool($0) })
            return o
        }
    }

    public struct Foreground: WireMessage {
        public static let fields = ["appId", "exclusive"]
        public var appId: String
        /// Default true: every other active app goes to the background.
        public var exclusive: Bool?
        public init(appId: String, exclusive: Bool? = nil) {
            self.appId = appId
            self.exclusive = exclusive
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(appId: try r.string("appId"), exclusive: try r.optionalBool("exclusive"))
        }
        public var json: [String: JSON] {
            var o: [String: JSON] = ["appId": .string(appId)]
            o.put("exclusive", exclusive.map { .bool($0) })
            return o
        }
    }

    /// `Background`'s parameters.
    public struct BackgroundCall: AppOnly {
        public static let fields = ["appId"]
        public var appId: String
        public init(appId: String) { self.appId = appId }
        public init(json: [String: JSON]) throws(WireFieldError) { appId = try WireReader(json).string("appId") }
        public var json: [String: JSON] { ["appId": .string(appId)] }
    }

    public struct SetFocus: WireMessage {
        public static let fields = ["appId", "reason"]
        /// nil (null): no app has the focus (the home screen, a locked screen).
        public var appId: String?
        /// compositor-focus or screen-locked.
        public var reason: Reason
        public init(appId: String?, reason: Reason) {
            self.appId = appId
            self.reason = reason
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            let reason: Reason = try r.value("reason")
            guard reason == .compositorFocus || reason == .screenLocked else { throw WireFieldError("reason") }
            self.init(appId: try r.optionalString("appId"), reason: reason)
        }
        public var json: [String: JSON] { ["appId": .orNull(appId), "reason": .raw(reason)] }
    }

    public struct Interrupt: AppOnly {
        public static let fields = ["appId"]
        public var appId: String
        public init(appId: String) { self.appId = appId }
        public init(json: [String: JSON]) throws(WireFieldError) { appId = try WireReader(json).string("appId") }
        public var json: [String: JSON] { ["appId": .string(appId)] }
    }

    public struct EndInterruption: AppOnly {
        public static let fields = ["appId"]
        public var appId: String
        public init(appId: String) { self.appId = appId }
        public init(json: [String: JSON]) throws(WireFieldError) { appId = try WireReader(json).string("appId") }
        public var json: [String: JSON] { ["appId": .string(appId)] }
    }

    public struct Terminate: AppOnly {
        public static let fields = ["appId"]
        public var appId: String
        public init(appId: String) { self.appId = appId }
        public init(json: [String: JSON]) throws(WireFieldError) { appId = try WireReader(json).string("appId") }
        public var json: [String: JSON] { ["appId": .string(appId)] }
    }

    public struct SetRefreshPolicy: WireMessage {
        public static let fields = ["appId", "enabled"]
        public var appId: String
        public var enabled: Bool
        public init(appId: String, enabled: Bool) {
            self.appId = appId
            self.enabled = enabled
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(appId: try r.string("appId"), enabled: try r.bool("enabled"))
        }
        public var json: [String: JSON] { ["appId": .string(appId), "enabled": .bool(enabled)] }
    }

    public struct SetGlobalRefresh: WireMessage {
        public static let fields = ["mode"]
        public var mode: RefreshMode
        public init(mode: RefreshMode) { self.mode = mode }
        public init(json: [String: JSON]) throws(WireFieldError) { mode = try WireReader(json).value("mode") }
        public var json: [String: JSON] { ["mode": .raw(mode)] }
    }

    public struct SetLowPowerMode: WireMessage {
        public static let fields = ["enabled"]
        public var enabled: Bool
        public init(enabled: Bool) { self.enabled = enabled }
        public init(json: [String: JSON]) throws(WireFieldError) { enabled = try WireReader(json).bool("enabled") }
        public var json: [String: JSON] { ["enabled": .bool(enabled)] }
    }

    public struct SetConditions: WireMessage {
        public static let fields = ["onExternalPower", "network"]
        public var onExternalPower: Bool?
        public var network: NetworkCondition?
        public init(onExternalPower: Bool? = nil, network: NetworkCondition? = nil) {
            self.onExternalPower = onExternalPower
            self.network = network
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(onExternalPower: try r.optionalBool("onExternalPower"), network: try r.optionalValue("network"))
        }
        public var json: [String: JSON] {
            var o: [String: JSON] = [:]
            o.put("onExternalPower", onExternalPower.map { .bool($0) })
            o.put("network", network.map { .raw($0) })
            return o
        }
    }

    public struct PostNotification: WireMessage {
        public static let fields = ["name", "appId", "payload"]
        /// Not empty.
        public var name: String
        /// nil: every app that checked in.
        public var appId: String?
        /// A JSON object.
        public var payload: JSON?
        public init(name: String, appId: String? = nil, payload: JSON? = nil) {
            self.name = name
            self.appId = appId
            self.payload = payload
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(name: try r.string("name"), appId: try r.optionalString("appId"), payload: try r.optionalObject("payload"))
            guard !name.isEmpty else { throw WireFieldError("name") }
        }
        public var json: [String: JSON] {
            var o: [String: JSON] = ["name": .string(name)]
            o.put("appId", appId.map { .string($0) })
            o.put("payload", payload)
            return o
        }
    }

    public struct WakeForRemoteNotification: WireMessage {
        public static let fields = ["appId", "payload"]
        public var appId: String
        /// A JSON object.
        public var payload: JSON?
        public init(appId: String, payload: JSON? = nil) {
            self.appId = appId
            self.payload = payload
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(appId: try r.string("appId"), payload: try r.optionalObject("payload"))
        }
        public var json: [String: JSON] {
            var o: [String: JSON] = ["appId": .string(appId)]
            o.put("payload", payload)
            return o
        }
    }

    /// SPEC §14: bgtaskd-focus saw method call `member` from `sender` addressed to the app on the session bus.
    public struct WakeForBusCall: WireMessage {
        public static let fields = ["appId", "sender", "member"]
        public var appId: String
        /// The caller's unique bus name (`:1.42`).
        public var sender: String
        /// The method called (`Activate`, `PlayPause`).
        public var member: String
        public init(appId: String, sender: String, member: String) {
            self.appId = appId
            self.sender = sender
            self.member = member
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(appId: try r.string("appId"), sender: try r.string("sender"), member: try r.string("member"))
            // Bus names and members are at most 255 bytes (D-Bus specification).
            guard sender.utf8.count <= 255 else { throw WireFieldError("sender") }
            guard !member.isEmpty, member.utf8.count <= 255 else { throw WireFieldError("member") }
        }
        public var json: [String: JSON] { ["appId": .string(appId), "sender": .string(sender), "member": .string(member)] }
    }

    public struct RunTaskNow: WireMessage {
        public static let fields = ["appId", "identifier"]
        public var appId: String
        /// Not empty.
        public var identifier: String
        public init(appId: String, identifier: String) {
            self.appId = appId
            self.identifier = identifier
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(appId: try r.string("appId"), identifier: try r.string("identifier"))
            guard !identifier.isEmpty else { throw WireFieldError("identifier") }
        }
        public var json: [String: JSON] { ["appId": .string(appId), "identifier": .string(identifier)] }
    }

    public struct Hold: WireMessage {
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

    // MARK: Replies

    public struct ListAppsReply: WireMessage {
        public static let fields = ["apps"]
        public var apps: [AppInfo]
        public init(apps: [AppInfo]) { self.apps = apps }
        public init(json: [String: JSON]) throws(WireFieldError) { apps = try WireReader(json).messages("apps") }
        public var json: [String: JSON] { ["apps": .array(apps.map { .object($0.json) })] }
    }

    public struct GetAppReply: WireMessage {
        public static let fields = ["app"]
        public var app: AppInfo
        public init(app: AppInfo) { self.app = app }
        public init(json: [String: JSON]) throws(WireFieldError) { app = try WireReader(json).message("app") }
        public var json: [String: JSON] { ["app": .object(app.json)] }
    }

    public struct ListAssertionsReply: WireMessage {
        public static let fields = ["assertions"]
        public var assertions: [Assertion]
        public init(assertions: [Assertion]) { self.assertions = assertions }
        public init(json: [String: JSON]) throws(WireFieldError) { assertions = try WireReader(json).messages("assertions") }
        public var json: [String: JSON] { ["assertions": .array(assertions.map { .object($0.json) })] }
    }

    public struct GetSettingsReply: WireMessage {
        public static let fields = ["settings"]
        public var settings: Settings
        public init(settings: Settings) { self.settings = settings }
        public init(json: [String: JSON]) throws(WireFieldError) { settings = try WireReader(json).message("settings") }
        public var json: [String: JSON] { ["settings": .object(settings.json)] }
    }

    public struct ExplainReply: WireMessage {
        public static let fields = ["state", "reasons", "causes"]
        public var state: WireEnum<AppState>
        /// Newest last.
        public var reasons: [Decision]
        public var causes: [String]
        public init(state: AppState, reasons: [Decision], causes: [String]) {
            self.state = WireEnum(state)
            self.reasons = reasons
            self.causes = causes
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            state = try r.value("state")
            reasons = try r.messages("reasons")
            causes = try r.optionalStrings("causes") ?? []
        }
        public var json: [String: JSON] {
            ["state": .raw(state), "reasons": .array(reasons.map { .object($0.json) }), "causes": .array(causes.map { .string($0) })]
        }
    }

    /// `Reload`'s reply: what changed and is in force, and what changed but is not (with file, line, key).
    public struct ReloadReply: WireMessage {
        public static let fields = ["applied", "notApplied"]
        public var applied: [String]
        public var notApplied: [String]
        public init(applied: [String], notApplied: [String]) {
            self.applied = applied
            self.notApplied = notApplied
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(applied: try r.optionalStrings("applied") ?? [], notApplied: try r.optionalStrings("notApplied") ?? [])
        }
        public var json: [String: JSON] {
            ["applied": .array(applied.map { .string($0) }), "notApplied": .array(notApplied.map { .string($0) })]
        }
    }

    public struct MonitorReply: WireMessage {
        public static let fields = ["decision"]
        public var decision: Decision
        public init(decision: Decision) { self.decision = decision }
        public init(json: [String: JSON]) throws(WireFieldError) { decision = try WireReader(json).message("decision") }
        public var json: [String: JSON] { ["decision": .object(decision.json)] }
    }

    public struct StatsReply: WireMessage {
        public static let fields = ["stats"]
        public var stats: DaemonStats
        public init(stats: DaemonStats) { self.stats = stats }
        public init(json: [String: JSON]) throws(WireFieldError) { stats = try WireReader(json).message("stats") }
        public var json: [String: JSON] { ["stats": .object(stats.json)] }
    }

    public struct HoldReply: WireMessage {
        public static let fields = ["holdId"]
        public var holdId: Int64
        public init(holdId: Int64) { self.holdId = holdId }
        public init(json: [String: JSON]) throws(WireFieldError) { holdId = try WireReader(json).int("holdId") }
        public var json: [String: JSON] { ["holdId": .int(holdId)] }
        public func write(into out: inout [UInt8]) {
            out.append(contentsOf: #"{"holdId":"#.utf8)
            JSON.writeInt(holdId, into: &out)
            out.append(UInt8(ascii: "}"))
        }
    }
}

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
