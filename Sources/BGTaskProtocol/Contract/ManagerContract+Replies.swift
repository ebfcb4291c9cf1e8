public import BGTaskModel

// The replies of the methods of `io.bgtaskd.Manager`.
extension ManagerWire {
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
