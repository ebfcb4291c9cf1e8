import ArgumentParser
import BGTaskClient
import BGTaskProtocol

#if canImport(Glibc)
import Glibc
#endif

/// `bgtaskctl`: control and inspect bgtaskd (SPEC §12), loginctl/systemctl style.
struct BGTaskCtl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bgtaskctl",
        abstract: "Control the app-lifecycle daemon bgtaskd: app states, background tasks, refresh policy.",
        discussion: """
            Read verbs (list, status, assertions, explain, monitor, stats, conditions) take --json. \
            Every verb takes --socket PATH (default: $BGTASKD_SOCKET, else \(GlobalOptions.defaultSocket)). \
            Exit status is 0 on success and 1 on error, with a one-line message on stderr; \
            hold exits with the status of its command.
            """,
        version: "0.1.0",
        subcommands: [
            List.self, Status.self, Launch.self, Foreground.self, Background.self, Interrupt.self,
            EndInterruption.self, Terminate.self, Assertions.self, Explain.self, Monitor.self, Log.self,
            Stats.self, Reload.self, Refresh.self, LowPower.self, Conditions.self, Notify.self, Wake.self,
            RunTask.self, Hold.self, DebugFormat.self,
        ]
    )

    /// Parses and runs, turning every failure into `bgtaskctl: message` on stderr and exit status 1
    /// (usage errors included: the contract is 0/1, not ArgumentParser's 64).
    static func main() {
        let arguments = hoistingGlobalOptions(Array(CommandLine.arguments.dropFirst()))
        do {
            var command = try parseAsRoot(arguments)
            try command.run()
            Glibc.exit(0)
        } catch let error as CtlError {
            Output.err("bgtaskctl: \(error.message)")
            Glibc.exit(1)
        } catch let code as ExitCode {
            Glibc.exit(code.rawValue)
        } catch {
            let status = exitCode(for: error)
            if status == .success {
                // --help, --version.
                Output.line(fullMessage(for: error))
                Glibc.exit(0)
            }
            // The first line only (the usage that follows is one `--help` away).
            var text = fullMessage(for: error).split(separator: "\n").first.map(String.init) ?? "invalid arguments"
            if text.hasPrefix("Error: ") { text.removeFirst("Error: ".count) }
            Output.err("bgtaskctl: " + text)
            Glibc.exit(1)
        }
    }
}

extension BGTaskCtl {
    /// Options that may come before the verb (`bgtaskctl --socket PATH list`), moved after it, where
    /// each verb declares them.
    static func hoistingGlobalOptions(_ arguments: [String]) -> [String] {
        var leading: [String] = []
        var i = 0
        while i < arguments.count {
            let a = arguments[i]
            if a == "--socket", i + 1 < arguments.count {
                leading += [a, arguments[i + 1]]
                i += 2
            } else if a.hasPrefix("--socket=") || a == "--json" || a == "--no-legend" {
                leading.append(a)
                i += 1
            } else {
                break
            }
        }
        guard !leading.isEmpty, i < arguments.count, !arguments[i].hasPrefix("-") else { return arguments }
        var verbPath = [arguments[i]]
        i += 1
        // `debug-format table`: the options go after the whole path of subcommand names.
        if verbPath[0] == DebugFormat.configuration.commandName, i < arguments.count, !arguments[i].hasPrefix("-") {
            verbPath.append(arguments[i])
            i += 1
        }
        return verbPath + leading + arguments[i...]
    }
}

/// A failure with the one line to print after `bgtaskctl: `.
struct CtlError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

/// Options every verb takes.
struct GlobalOptions: ParsableArguments {
    static let defaultSocket = "/run/bgtaskd/io.bgtaskd"

    @Option(name: .long, help: ArgumentHelp("The daemon's socket (default: $BGTASKD_SOCKET, else \(defaultSocket)).", valueName: "path"))
    var socket: String?

    var socketPath: String {
        if let socket { return socket }
        if let env = Terminal.env("BGTASKD_SOCKET"), !env.isEmpty { return env }
        return Self.defaultSocket
    }

    /// A connection to the daemon, or the one-line reason there is none.
    func connect() throws(CtlError) -> Client {
        let path = socketPath
        do {
            return Client(connection: try VarlinkClientConnection(path: path), socket: path)
        } catch {
            throw CtlError(ErrorText.describe(error, socket: path))
        }
    }
}

/// `--json` on read verbs.
struct JSONOptions: ParsableArguments {
    @Flag(name: .long, help: "Print the daemon's reply as JSON (keys sorted; indented on a terminal, one line otherwise).")
    var json = false

    /// Prints `reply` as JSON.
    func print(_ reply: [String: JSON], terminal: Terminal) {
        Output.line(terminal.isTTY ? JSONText.pretty(.object(reply)) : JSONText.compact(.object(reply)))
    }
}

/// `--no-legend` on table verbs.
struct LegendOptions: ParsableArguments {
    @Flag(name: .long, help: "Print neither the column headers nor the footer.")
    var noLegend = false
}

/// One connection to the daemon, with errors turned into one-line messages.
struct Client {
    let connection: VarlinkClientConnection
    let socket: String

    static let manager = "io.bgtaskd.Manager."
    static let app = "io.bgtaskd.App."

    /// Calls an `io.bgtaskd.Manager` method.
    @discardableResult
    func manager(_ method: String, _ parameters: [String: JSON] = [:]) throws(CtlError) -> [String: JSON] {
        try call(Self.manager + method, parameters)
    }

    @discardableResult
    func call(_ method: String, _ parameters: [String: JSON] = [:]) throws(CtlError) -> [String: JSON] {
        do {
            return try connection.call(method, parameters)
        } catch {
            throw CtlError(ErrorText.describe(error, socket: socket))
        }
    }

    /// Streams `method` (with `more`) until the daemon ends it or `body` returns false.
    func stream(_ method: String, _ parameters: [String: JSON] = [:], _ body: ([String: JSON]) -> Bool) throws(CtlError) {
        do {
            try connection.stream(method, parameters, body)
        } catch {
            throw CtlError(ErrorText.describe(error, socket: socket))
        }
    }
}

/// `on`/`off` arguments.
enum Switch: String, ExpressibleByArgument, CaseIterable {
    case on, off
    var enabled: Bool { self == .on }
}

/// Parses `--payload`: a JSON object (the interfaces take `payload: ?object`).
func parsePayload(_ text: String?) throws(CtlError) -> JSON? {
    guard let text else { return nil }
    let value: JSON
    do { value = try JSON.parse(text) } catch { throw CtlError("--payload: \(error.description)") }
    guard case .object = value else { throw CtlError("--payload must be a JSON object") }
    return value
}
