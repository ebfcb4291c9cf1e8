import ArgumentParser
import BGTaskDaemon

/// `bgtaskd [--config-dir DIR] [--state-dir DIR] [--runtime-dir DIR] [--socket PATH] [--launcher-socket PATH]`
struct BgtaskdCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bgtaskd",
        abstract: "The app-lifecycle daemon: app states, background-task assertions, freezing, refresh policy.",
        version: "0.1.0"
    )

    @Option(help: "Directory holding bgtaskd.conf, bgtaskd.conf.d/ and apps.d/.")
    var configDir = "/etc/bgtaskd"

    @Option(help: "Directory for persistent state.")
    var stateDir = "/var/lib/bgtaskd"

    @Option(help: "Directory for runtime files (the socket by default).")
    var runtimeDir = "/run/bgtaskd"

    @Option(help: "Listen on this socket path (overrides Socket=).")
    var socket: String?

    @Option(help: "Start apps through bgtaskd-launcher on this socket (overrides LauncherSocket=; empty: start them in-process).")
    var launcherSocket: String?

    func validate() throws {
        if let launcherSocket, !launcherSocket.isEmpty, !launcherSocket.hasPrefix("/") {
            throw ValidationError("--launcher-socket must be an absolute path")
        }
    }

    func run() throws {
        var options = DaemonOptions()
        options.configDir = configDir
        options.stateDir = stateDir
        options.runtimeDir = runtimeDir
        options.socketPath = socket
        options.launcherSocketPath = launcherSocket
        Daemon(options: options).run()
    }
}
