import BGTaskCommandLine
import BGTaskDaemon

/// `bgtaskd [--config-dir DIR] [--state-dir DIR] [--runtime-dir DIR] [--socket PATH] [--launcher-socket PATH]`
enum BgtaskdCommand {
    static let spec = CommandLineSpec(
        command: "bgtaskd",
        abstract: "The app-lifecycle daemon: app states, background-task assertions, freezing, refresh policy.",
        version: "0.1.0",
        options: [
            .init("config-dir", help: "Directory holding bgtaskd.conf, bgtaskd.conf.d/ and apps.d/.", defaultValue: "/etc/bgtaskd"),
            .init("state-dir", help: "Directory for persistent state.", defaultValue: "/var/lib/bgtaskd"),
            .init("runtime-dir", help: "Directory for runtime files (the socket by default).", defaultValue: "/run/bgtaskd"),
            .init("socket", help: "Listen on this socket path (overrides Socket=)."),
            .init("launcher-socket", help: "Start apps through bgtaskd-launcher on this socket (overrides LauncherSocket=; empty: start them in-process)."),
        ])

    static func main() -> Never {
        switch spec.parse(Array(CommandLine.arguments.dropFirst())) {
        case .failure(let exit):
            CommandLineSpec.finish(exit)
        case .success(let values):
            var options = DaemonOptions()
            if let v = values["config-dir"] { options.configDir = v }
            if let v = values["state-dir"] { options.stateDir = v }
            if let v = values["runtime-dir"] { options.runtimeDir = v }
            options.socketPath = values["socket"]
            options.launcherSocketPath = values["launcher-socket"]
            if let launcher = options.launcherSocketPath, !launcher.isEmpty, !launcher.hasPrefix("/") {
                CommandLineSpec.finish(spec.usageError("--launcher-socket must be an absolute path"))
            }
            Daemon(options: options).run()
        }
    }
}
