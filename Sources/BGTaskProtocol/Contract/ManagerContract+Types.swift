public import BGTaskModel

// The `type` declarations of `io.bgtaskd.Manager`.
extension ManagerWire {
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
            "lastForegroundUSec", "energy", "bucket",
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
        /// SPEC §16: background CPU and wakes (ManagerContract+Energy.swift).
        public var energy: AppEnergy?
        /// SPEC §16: the app's standby bucket (active, working-set, frequent, rare, restricted).
        public var bucket: String?

        public init(
            appId: String, name: String, state: AppState, pid: Int64?, uid: Int64?, lifecycleAware: Bool,
            assertions: [Assertion], activities: [Activity], refreshSetting: Bool, refreshStatus: RefreshStatus,
            backgroundTimeRemainingUSec: Int64?, pendingTaskRequests: Int64, lastDecision: Decision?,
            refreshStatusReason: Reason?, lastForegroundUSec: Int64?, energy: AppEnergy? = nil, bucket: String? = nil
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
            self.energy = energy
            self.bucket = bucket
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
            energy = try r.optionalMessage("energy")
            bucket = try r.optionalString("bucket")
        }

        public var json: [String: JSON] {
            var o = plainJSON
            // Absent when unknown (a reply of a daemon without accounting reads the same as before).
            if let energy { o["energy"] = .object(energy.json) }
            if let bucket { o["bucket"] = .string(bucket) }
            return o
        }

        private var plainJSON: [String: JSON] {
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
}
