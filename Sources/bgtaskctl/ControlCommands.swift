import BGTaskCommandLine
import BGTaskModel
import BGTaskCtlKit
import BGTaskProtocol

// Control verbs: root or ControlGroup= members (SPEC §10). Silent on success, like systemctl.

/// A verb that calls one Manager method with the app ID as its only parameter.
protocol AppVerb: CtlVerb {
    associatedtype Parameters: ManagerWire.AppOnly
    static var method: ManagerMethod { get }
    static var name: String { get }
    static var abstract: String { get }
    var global: GlobalOptions { get }
    var app: String { get }
    init(global: GlobalOptions, app: String)
}

extension AppVerb {
    static var verb: VerbLine.Verb {
        VerbLine.Verb(name, abstract: abstract, options: GlobalOptions.options, arguments: [appArgument])
    }

    init(_ p: VerbLine.Parsed) { self.init(global: GlobalOptions(p), app: p.arguments[0]) }

    func run() throws {
        try global.connect().manager(Self.method, Parameters(appId: app))
    }
}

/// `<app>`, the first argument of most verbs.
let appArgument = Argument("app", help: "The app's ID.")

struct Launch: CtlVerb {
    static let verb = VerbLine.Verb(
        "launch", abstract: "Launch an app, to the foreground or with --background into the background (Launch).",
        options: GlobalOptions.options + [.flag("background", help: "Launch into the background instead of the foreground.")],
        arguments: [appArgument])

    var global: GlobalOptions
    var app: String
    var background: Bool

    init(_ p: VerbLine.Parsed) {
        global = GlobalOptions(p)
        app = p.arguments[0]
        background = p.flag("background")
    }

    func run() throws {
        try global.connect().manager(.launch, ManagerWire.Launch(appId: app, background: background))
    }
}

struct Foreground: CtlVerb {
    static let verb = VerbLine.Verb(
        "foreground",
        abstract: "Bring an app to the foreground; the active apps go to the background unless --keep-others (Foreground).",
        options: GlobalOptions.options + [.flag("keep-others", help: "Leave the other active apps active (a desktop).")]
            + SceneOptions.options
            + [.flag("inactive", help: "With --scene: the scene is visible but not active (foreground-inactive).")],
        arguments: [appArgument])

    var global: GlobalOptions
    var app: String
    var keepOthers: Bool
    var scene: SceneOptions
    var inactive: Bool

    init(_ p: VerbLine.Parsed) {
        global = GlobalOptions(p)
        app = p.arguments[0]
        keepOthers = p.flag("keep-others")
        scene = SceneOptions(p)
        inactive = p.flag("inactive")
    }

    func run() throws {
        if let id = scene.scene {
            return try scene.set(app, id, inactive ? .foregroundInactive : .foregroundActive, global)
        }
        try global.connect().manager(.foreground, ManagerWire.Foreground(appId: app, exclusive: !keepOthers))
    }
}

struct Background: CtlVerb {
    static let verb = VerbLine.Verb(
        "background", abstract: "Send an app, or one scene of it with --scene, to the background (Background, SetSceneState).",
        options: GlobalOptions.options + SceneOptions.options
            + [.flag("closed", help: "With --scene: the scene is gone (its window closed: disconnected).")],
        arguments: [appArgument])

    var global: GlobalOptions
    var app: String
    var scene: SceneOptions
    var closed: Bool

    init(_ p: VerbLine.Parsed) {
        global = GlobalOptions(p)
        app = p.arguments[0]
        scene = SceneOptions(p)
        closed = p.flag("closed")
    }

    func run() throws {
        if let id = scene.scene { return try scene.set(app, id, closed ? .disconnected : .background, global) }
        try global.connect().manager(.background, ManagerWire.BackgroundCall(appId: app))
    }
}

/// SPEC §15: `--scene ID` makes `foreground` and `background` report one scene (window) of the app.
struct SceneOptions {
    static let options: [Option] = [
        Option("scene", help: "One scene (window) of the app, by an ID of your choosing (SetSceneState): the app's state follows its scenes."),
        Option("title", help: "With --scene: the scene's title."),
        Option("output", help: "With --scene: the display the scene is on."),
    ]

    var scene: String?
    var title: String?
    var output: String?

    init(_ p: VerbLine.Parsed) {
        scene = p.options["scene"]
        title = p.options["title"]
        output = p.options["output"]
    }

    func set(_ app: String, _ scene: String, _ state: SceneState, _ global: GlobalOptions) throws {
        try global.connect().manager(
            .setSceneState, ManagerWire.SetSceneState(appId: app, sceneId: scene, state: state, title: title, output: output))
    }
}

struct Interrupt: AppVerb {
    static let name = "interrupt"
    static let abstract = "Interrupt an active app: it becomes inactive (Interrupt)."
    typealias Parameters = ManagerWire.Interrupt
    static let method = ManagerMethod.interrupt
    var global: GlobalOptions
    var app: String
}

struct EndInterruption: AppVerb {
    static let name = "end-interruption"
    static let abstract = "End an interruption: the app becomes active again (EndInterruption)."
    typealias Parameters = ManagerWire.EndInterruption
    static let method = ManagerMethod.endInterruption
    var global: GlobalOptions
    var app: String
}

struct Terminate: CtlVerb {
    static let verb = VerbLine.Verb(
        "terminate",
        abstract: "Terminate an app as the user closing it (Terminate, userInitiated): no background launch until launched again.",
        options: GlobalOptions.options, arguments: [appArgument])
    static let method = ManagerMethod.terminate
    var global: GlobalOptions
    var app: String

    init(_ p: VerbLine.Parsed) {
        global = GlobalOptions(p)
        app = p.arguments[0]
    }

    /// SPEC §16: `bgtaskctl terminate` is the user.
    func run() throws {
        try global.connect().manager(Self.method, ManagerWire.Terminate(appId: app, userInitiated: true))
    }
}

struct Reload: CtlVerb {
    static let verb = VerbLine.Verb(
        "reload", abstract: "Re-read the configuration and app manifests (Reload).", options: GlobalOptions.options)
    var global: GlobalOptions

    init(_ p: VerbLine.Parsed) { global = GlobalOptions(p) }

    func run() throws {
        let reply = try global.connect().manager(.reload)
        // A change the daemon could not apply (a key read only at start) is a failure to say, as systemctl
        // says a unit's change needs daemon-reload: exit 1, the rest of the reload stays applied.
        guard let report = try? ManagerWire.ReloadReply(json: reply), !report.notApplied.isEmpty else { return }
        let head = report.applied.isEmpty
            ? "Nothing reloaded, a restart of bgtaskd is needed"
            : "Configuration reloaded (\(report.applied.joined(separator: ", "))), but a restart of bgtaskd is needed"
        throw CtlError(([head + ":"] + report.notApplied.map { "  " + $0 }).joined(separator: "\n"))
    }
}

struct Refresh: CtlVerb {
    static let verb = VerbLine.Verb(
        "refresh",
        abstract: "Turn Background App Refresh on or off for an app (SetRefreshPolicy), or set the global mode (SetGlobalRefresh); without arguments, show every app's setting and status.",
        usage: """
            bgtaskctl refresh
            bgtaskctl refresh <app> on|off
            bgtaskctl refresh --global on|unmetered|off
            """,
        options: GlobalOptions.options
            + [Option("global", help: "The global setting: on, unmetered (only on unmetered networks) or off.")]
            + JSONOptions.options + LegendOptions.options,
        arguments: [Argument("arguments", help: "The app's ID, then on or off.", repeating: true)])

    enum GlobalMode: String, CaseIterable {
        case on, unmetered, off
        var mode: RefreshMode {
            switch self {
            case .on: return .on
            case .unmetered: return .unmetered
            case .off: return .off
            }
        }
    }

    var global: GlobalOptions
    var globalMode: GlobalMode?
    var arguments: [String]
    var output: JSONOptions
    var legend: LegendOptions

    init(_ p: VerbLine.Parsed) throws(VerbLine.Stop) {
        global = GlobalOptions(p)
        globalMode = try p.options["global"].map { v throws(VerbLine.Stop) in try choice(v, GlobalMode.self, for: "--global <global>") }
        arguments = p.arguments
        output = JSONOptions(p)
        legend = LegendOptions(p)
        try validate()
    }

    func validate() throws(VerbLine.Stop) {
        if globalMode == nil, arguments.isEmpty { return }
        if globalMode != nil {
            guard arguments.isEmpty else { throw .usage("refresh --global takes no app (use `refresh APP on|off` for one app)") }
            return
        }
        guard arguments.count == 2 else { throw .usage("usage: refresh APP on|off, or refresh --global on|unmetered|off") }
        guard Switch(rawValue: arguments[1]) != nil else { throw .usage("refresh: expected on or off, not '\(arguments[1])'") }
    }

    func run() throws {
        let client = try global.connect()
        if globalMode == nil, arguments.isEmpty {
            var (reply, sent) = try client.manager(.listApps, reply: ManagerWire.ListAppsReply.self)
            let (settings, sentSettings) = try client.manager(.getSettings, reply: ManagerWire.GetSettingsReply.self)
            let terminal = Terminal.current()
            if output.json {
                let key = ManagerWire.GetSettingsReply.fields[0]
                sent[key] = sentSettings[key] ?? .object([:])
                return output.print(sent, terminal: terminal)
            }
            return Output.lines(
                Render.refreshTable(reply, settings: settings.settings, width: terminal.width, color: terminal.color, legend: !legend.noLegend))
        }
        if let globalMode {
            try client.manager(.setGlobalRefresh, ManagerWire.SetGlobalRefresh(mode: globalMode.mode))
        } else if let setting = Switch(rawValue: arguments[1]) {
            try client.manager(.setRefreshPolicy, ManagerWire.SetRefreshPolicy(appId: arguments[0], enabled: setting.enabled))
        }
    }
}

struct LowPower: CtlVerb {
    static let verb = VerbLine.Verb(
        "low-power", abstract: "Turn Low Power Mode on or off: it disables refresh for every app (SetLowPowerMode).",
        options: GlobalOptions.options, arguments: [Argument("setting", help: "on or off.")])
    var global: GlobalOptions
    var setting: Switch

    init(_ p: VerbLine.Parsed) throws(VerbLine.Stop) {
        global = GlobalOptions(p)
        setting = try choice(p.arguments[0], Switch.self, for: "<setting>")
    }

    func run() throws {
        try global.connect().manager(.setLowPowerMode, ManagerWire.SetLowPowerMode(enabled: setting.enabled))
    }
}

struct Conditions: CtlVerb {
    static let verb = VerbLine.Verb(
        "conditions",
        abstract: "Set the power and network conditions scheduled tasks wait for (SetConditions); without options, show them (GetSettings).",
        options: GlobalOptions.options + JSONOptions.options
            + [Option("power", help: "external or battery."), Option("network", help: "none, metered or unmetered.")])

    enum Power: String, CaseIterable { case external, battery }
    enum Network: String, CaseIterable { case none, metered, unmetered }

    var global: GlobalOptions
    var output: JSONOptions
    var power: Power?
    var network: Network?

    init(_ p: VerbLine.Parsed) throws(VerbLine.Stop) {
        global = GlobalOptions(p)
        output = JSONOptions(p)
        power = try p.options["power"].map { v throws(VerbLine.Stop) in try choice(v, Power.self, for: "--power <power>") }
        network = try p.options["network"].map { v throws(VerbLine.Stop) in try choice(v, Network.self, for: "--network <network>") }
    }

    func run() throws {
        let client = try global.connect()
        if power == nil && network == nil {
            let (reply, sent) = try client.manager(.getSettings, reply: ManagerWire.GetSettingsReply.self)
            let terminal = Terminal.current()
            if output.json { return output.print(sent, terminal: terminal) }
            // Only the conditions and what they govern; `stats`/GetSettings hold the rest.
            Output.lines(Render.conditions(reply.settings))
            return
        }
        let parameters = ManagerWire.SetConditions(
            onExternalPower: power.map { $0 == .external }, network: network.flatMap { NetworkCondition(rawValue: $0.rawValue) })
        try client.manager(.setConditions, parameters)
    }
}

struct Notify: CtlVerb {
    static let verb = VerbLine.Verb(
        "notify", abstract: "Post a notification to one app or to all; suspended apps get it when next thawed (PostNotification).",
        options: GlobalOptions.options + [payloadOption],
        arguments: [Argument("name", help: "The notification's name."), Argument("app", help: "The app's ID (default: every app).", optional: true)])
    var global: GlobalOptions
    var name: String
    var app: String?
    var payload: String?

    init(_ p: VerbLine.Parsed) {
        global = GlobalOptions(p)
        name = p.arguments[0]
        app = p.arguments.count > 1 ? p.arguments[1] : nil
        payload = p.options["payload"]
    }

    func run() throws {
        let parameters = ManagerWire.PostNotification(name: name, appId: app, payload: try parsePayload(payload))
        try global.connect().manager(.postNotification, parameters)
    }
}

/// `--payload` of notify and wake.
let payloadOption = Option("payload", help: "A JSON object delivered with the notification.")

struct Wake: CtlVerb {
    static let verb = VerbLine.Verb(
        "wake", abstract: "Wake an app for a remote notification, as a push would (WakeForRemoteNotification).",
        options: GlobalOptions.options + [payloadOption], arguments: [appArgument])
    var global: GlobalOptions
    var app: String
    var payload: String?

    init(_ p: VerbLine.Parsed) {
        global = GlobalOptions(p)
        app = p.arguments[0]
        payload = p.options["payload"]
    }

    func run() throws {
        let parameters = ManagerWire.WakeForRemoteNotification(appId: app, payload: try parsePayload(payload))
        try global.connect().manager(.wakeForRemoteNotification, parameters)
    }
}

struct RunTask: CtlVerb {
    static let verb = VerbLine.Verb(
        "run-task",
        abstract: "Run an app's pending task request now, bypassing dates and conditions but not the refresh policy (RunTaskNow).",
        options: GlobalOptions.options, arguments: [appArgument, Argument("identifier", help: "The task request's identifier.")])
    var global: GlobalOptions
    var app: String
    var identifier: String

    init(_ p: VerbLine.Parsed) {
        global = GlobalOptions(p)
        app = p.arguments[0]
        identifier = p.arguments[1]
    }

    func run() throws {
        try global.connect().manager(.runTaskNow, ManagerWire.RunTaskNow(appId: app, identifier: identifier))
    }
}
