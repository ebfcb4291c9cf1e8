import ArgumentParser
import BGTaskModel
import BGTaskCtlKit
import BGTaskProtocol

// Control verbs: root or ControlGroup= members (SPEC §10). Silent on success, like systemctl.

/// A verb that calls one Manager method with the app ID as its only parameter.
protocol AppVerb: ParsableCommand {
    associatedtype Parameters: ManagerWire.AppOnly
    static var method: ManagerMethod { get }
    var global: GlobalOptions { get }
    var app: String { get }
}

extension AppVerb {
    func run() throws {
        try global.connect().manager(Self.method, Parameters(appId: app))
    }
}

struct Launch: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Launch an app, to the foreground or with --background into the background (Launch).")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The app's ID.") var app: String
    @Flag(name: .long, help: "Launch into the background instead of the foreground.") var background = false

    func run() throws {
        try global.connect().manager(.launch, ManagerWire.Launch(appId: app, background: background))
    }
}

struct Foreground: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Bring an app to the foreground; the active apps go to the background unless --keep-others (Foreground)."
    )

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The app's ID.") var app: String
    @Flag(name: .long, help: "Leave the other active apps active (a desktop).") var keepOthers = false
    @OptionGroup var scene: SceneOptions
    @Flag(name: .long, help: "With --scene: the scene is visible but not active (foreground-inactive).") var inactive = false

    func run() throws {
        if let id = scene.scene {
            return try scene.set(app, id, inactive ? .foregroundInactive : .foregroundActive, global)
        }
        try global.connect().manager(.foreground, ManagerWire.Foreground(appId: app, exclusive: !keepOthers))
    }
}

struct Background: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Send an app, or one scene of it with --scene, to the background (Background, SetSceneState).")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The app's ID.") var app: String
    @OptionGroup var scene: SceneOptions
    @Flag(name: .long, help: "With --scene: the scene is gone (its window closed: disconnected).") var closed = false

    func run() throws {
        if let id = scene.scene { return try scene.set(app, id, closed ? .disconnected : .background, global) }
        try global.connect().manager(.background, ManagerWire.BackgroundCall(appId: app))
    }
}

/// SPEC §15: `--scene ID` makes `foreground` and `background` report one scene (window) of the app.
struct SceneOptions: ParsableArguments {
    @Option(name: .long, help: "One scene (window) of the app, by an ID of your choosing (SetSceneState): the app's state follows its scenes.")
    var scene: String?
    @Option(name: .long, help: "With --scene: the scene's title.") var title: String?
    @Option(name: .long, help: "With --scene: the display the scene is on.") var output: String?

    func set(_ app: String, _ scene: String, _ state: SceneState, _ global: GlobalOptions) throws {
        try global.connect().manager(
            .setSceneState, ManagerWire.SetSceneState(appId: app, sceneId: scene, state: state, title: title, output: output))
    }
}

struct Interrupt: AppVerb {
    static let configuration = CommandConfiguration(abstract: "Interrupt an active app: it becomes inactive (Interrupt).")
    typealias Parameters = ManagerWire.Interrupt
    static let method = ManagerMethod.interrupt
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The app's ID.") var app: String
}

struct EndInterruption: AppVerb {
    static let configuration = CommandConfiguration(
        commandName: "end-interruption", abstract: "End an interruption: the app becomes active again (EndInterruption)."
    )
    typealias Parameters = ManagerWire.EndInterruption
    static let method = ManagerMethod.endInterruption
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The app's ID.") var app: String
}

struct Terminate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Terminate an app as the user closing it (Terminate, userInitiated): no background launch until launched again.")
    static let method = ManagerMethod.terminate
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The app's ID.") var app: String

    /// SPEC §16: `bgtaskctl terminate` is the user.
    func run() throws {
        try global.connect().manager(Self.method, ManagerWire.Terminate(appId: app, userInitiated: true))
    }
}

struct Reload: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Re-read the configuration and app manifests (Reload).")
    @OptionGroup var global: GlobalOptions

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

struct Refresh: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Turn Background App Refresh on or off for an app (SetRefreshPolicy), or set the global mode (SetGlobalRefresh); without arguments, show every app's setting and status.",
        usage: """
            bgtaskctl refresh
            bgtaskctl refresh <app> on|off
            bgtaskctl refresh --global on|unmetered|off
            """
    )

    enum GlobalMode: String, ExpressibleByArgument, CaseIterable {
        case on, unmetered, off
        var mode: RefreshMode {
            switch self {
            case .on: return .on
            case .unmetered: return .unmetered
            case .off: return .off
            }
        }
    }

    @OptionGroup var global: GlobalOptions
    @Option(name: .customLong("global"), help: "The global setting: on, unmetered (only on unmetered networks) or off.")
    var globalMode: GlobalMode?
    @Argument(help: "The app's ID, then on or off.") var arguments: [String] = []
    @OptionGroup var output: JSONOptions
    @OptionGroup var legend: LegendOptions

    func validate() throws {
        if globalMode == nil, arguments.isEmpty { return }
        if globalMode != nil {
            guard arguments.isEmpty else { throw ValidationError("refresh --global takes no app (use `refresh APP on|off` for one app)") }
            return
        }
        guard arguments.count == 2 else { throw ValidationError("usage: refresh APP on|off, or refresh --global on|unmetered|off") }
        guard Switch(rawValue: arguments[1]) != nil else { throw ValidationError("refresh: expected on or off, not '\(arguments[1])'") }
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

struct LowPower: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "low-power", abstract: "Turn Low Power Mode on or off: it disables refresh for every app (SetLowPowerMode)."
    )
    @OptionGroup var global: GlobalOptions
    @Argument(help: "on or off.") var setting: Switch

    func run() throws {
        try global.connect().manager(.setLowPowerMode, ManagerWire.SetLowPowerMode(enabled: setting.enabled))
    }
}

struct Conditions: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Set the power and network conditions scheduled tasks wait for (SetConditions); without options, show them (GetSettings)."
    )

    enum Power: String, ExpressibleByArgument, CaseIterable { case external, battery }
    enum Network: String, ExpressibleByArgument, CaseIterable { case none, metered, unmetered }

    @OptionGroup var global: GlobalOptions
    @OptionGroup var output: JSONOptions
    @Option(help: "external or battery.") var power: Power?
    @Option(help: "none, metered or unmetered.") var network: Network?

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

struct Notify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Post a notification to one app or to all; suspended apps get it when next thawed (PostNotification)."
    )
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The notification's name.") var name: String
    @Argument(help: "The app's ID (default: every app).") var app: String?
    @Option(help: "A JSON object delivered with the notification.") var payload: String?

    func run() throws {
        let parameters = ManagerWire.PostNotification(name: name, appId: app, payload: try parsePayload(payload))
        try global.connect().manager(.postNotification, parameters)
    }
}

struct Wake: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Wake an app for a remote notification, as a push would (WakeForRemoteNotification)."
    )
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The app's ID.") var app: String
    @Option(help: "A JSON object delivered with the notification.") var payload: String?

    func run() throws {
        let parameters = ManagerWire.WakeForRemoteNotification(appId: app, payload: try parsePayload(payload))
        try global.connect().manager(.wakeForRemoteNotification, parameters)
    }
}

struct RunTask: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run-task",
        abstract: "Run an app's pending task request now, bypassing dates and conditions but not the refresh policy (RunTaskNow)."
    )
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The app's ID.") var app: String
    @Argument(help: "The task request's identifier.") var identifier: String

    func run() throws {
        try global.connect().manager(.runTaskNow, ManagerWire.RunTaskNow(appId: app, identifier: identifier))
    }
}
