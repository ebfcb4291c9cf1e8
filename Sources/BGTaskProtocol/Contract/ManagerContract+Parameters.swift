public import BGTaskModel

// The parameters of the methods of `io.bgtaskd.Manager`.
extension ManagerWire {
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
        public static let fields = ["appId", "userInitiated"]
        public var appId: String
        /// SPEC §16: the user closed the app (the App Switcher's swipe): no launch into the background for
        /// tasks or remote notifications until the user launches it again.
        public var userInitiated: Bool?
        public init(appId: String) { self.appId = appId }
        public init(appId: String, userInitiated: Bool?) {
            self.appId = appId
            self.userInitiated = userInitiated
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(appId: try r.string("appId"), userInitiated: try r.optionalBool("userInitiated"))
        }
        public var json: [String: JSON] {
            var o: [String: JSON] = ["appId": .string(appId)]
            if let userInitiated { o["userInitiated"] = .bool(userInitiated) }
            return o
        }
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
}
