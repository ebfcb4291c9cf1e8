import ArgumentParser
import BGTaskProtocol

#if canImport(Glibc)
import Glibc
#endif

struct Log: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the daemon's journal, or one app's decisions: journalctl -t bgtaskd [BGTASKD_APP=APP] [ARGS…].",
        usage: "bgtaskctl log [<app>] [<journalctl-args> ...]",
        discussion: "Arguments after the app (or all of them, if the first starts with '-') go to journalctl as they are: -f, -n 50, -o json, --since today…"
    )

    /// Accepted like on every verb, though journalctl needs no socket.
    @OptionGroup var global: GlobalOptions
    @Argument(parsing: .captureForPassthrough, help: "An app ID, then any journalctl arguments.")
    var arguments: [String] = []

    /// The journalctl command line: the first argument is the app unless it looks like an option.
    static func journalctlArguments(_ arguments: [String]) -> [String] {
        var rest = arguments
        if rest.first == "--" { rest.removeFirst() }
        var argv = ["journalctl", "-t", "bgtaskd"]
        if let first = rest.first, !first.hasPrefix("-") {
            argv.append("BGTASKD_APP=\(first)")
            rest.removeFirst()
        }
        return argv + rest
    }

    func run() throws {
        // Everything else goes to journalctl, but a first -h is ours.
        if let first = arguments.first, first == "-h" || first == "--help" { throw CleanExit.helpRequest(self) }
        let argv = Self.journalctlArguments(arguments)
        let why = Processes.exec(argv)
        throw CtlError("cannot run journalctl: \(why)")
    }
}

struct Hold: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a command while holding a background-task assertion for an app, like systemd-inhibit.",
        usage: "bgtaskctl hold --app <app> [--name <name>] -- <command> ...",
        discussion: """
            Begins a background task for the app (BeginBackgroundTask), runs COMMAND with the connection held open, \
            then ends the task (EndBackgroundTask) and exits with COMMAND's status (128+N if signal N killed it). \
            The assertion lives exactly as long as the connection: if bgtaskctl dies, the daemon releases it. \
            SIGINT and SIGTERM sent to bgtaskctl are passed on to COMMAND. A denied task (taskId 0) runs nothing \
            and exits 1; a COMMAND that cannot be started exits 127 (not found) or 126.
            """
    )

    @OptionGroup var global: GlobalOptions
    @Option(help: "The app the assertion is for.") var app: String
    @Option(help: "The assertion's name (default: the command line).") var name: String?
    @Argument(parsing: .captureForPassthrough, help: "The command to run and its arguments.")
    var command: [String] = []

    var commandLine: [String] {
        command.first == "--" ? Array(command.dropFirst()) : command
    }

    func validate() throws {
        guard !commandLine.isEmpty else { throw ValidationError("hold needs a command: hold --app APP -- COMMAND…") }
    }

    func run() throws {
        let argv = commandLine
        let client = try global.connect()
        let taskName = name ?? String(argv.joined(separator: " ").prefix(200))
        let reply = try client.call(Client.app + "BeginBackgroundTask", ["appId": .string(app), "name": .string(taskName)])
        guard let taskId = reply.int("taskId") else { throw CtlError("BeginBackgroundTask: the reply has no taskId") }
        guard taskId != 0 else { throw CtlError(denialMessage(client)) }

        let status: Int32
        do {
            status = try Processes.runForwardingSignals(argv)
        } catch {
            endTask(client, taskId)
            Output.err("bgtaskctl: cannot run \(argv[0]): \(error.message)")
            // As a shell says it: 127 for a command not found, 126 for one that cannot be run.
            throw ExitCode(error.message == String(cString: strerror(ENOENT)) ? 127 : 126)
        }
        endTask(client, taskId)
        throw ExitCode(status)
    }

    /// Ends the assertion; a failure is reported but does not change the exit status (closing the
    /// connection, which happens at exit anyway, releases it too).
    private func endTask(_ client: Client, _ taskId: Int64) {
        do {
            try client.call(Client.app + "EndBackgroundTask", ["appId": .string(app), "taskId": .int(taskId)])
        } catch {
            Output.err("bgtaskctl: warning: EndBackgroundTask: \(error.message)")
        }
    }

    /// Why the daemon said no: its last decision about the app, when that is the denial.
    private func denialMessage(_ client: Client) -> String {
        var text = "background task for \(app) denied"
        if let info = try? client.manager("GetApp", ["appId": .string(app)]).object("app") {
            if let last = info.object("lastDecision").map(DecisionRecord.init), last.decision == "deny" {
                // The daemon's own sentence says it best; the reason is the greppable word.
                text = last.message.isEmpty ? text + ": \(last.reason)" : "\(last.message) (\(last.reason))"
            } else if let state = info.string("state") {
                text += " (app is \(state)"
                    + (info.int("backgroundTimeRemainingUSec").map { ", \(Durations.format(usec: $0)) of background time left" } ?? "")
                    + ")"
            }
        }
        return text
    }
}
