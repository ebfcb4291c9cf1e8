import BGTaskClientCore
import BGTaskCommandLine
import BGTaskCtlKit
import BGTaskProtocol

#if canImport(Glibc)
import Glibc
#endif

/// `bgtaskctl`: control and inspect bgtaskd (SPEC §12), loginctl/systemctl style.
enum BGTaskCtl {
    /// Every verb, in the order `--help` lists them.
    static var verbs: [any CtlVerb.Type] { [
        List.self, Status.self, Launch.self, Foreground.self, Background.self, Interrupt.self,
        EndInterruption.self, Terminate.self, Assertions.self, Explain.self, Monitor.self, Log.self,
        Stats.self, Reload.self, Refresh.self, LowPower.self, Conditions.self, Notify.self, Wake.self,
        RunTask.self, Hold.self, Snapshot.self, Record.self, Replay.self, Energy.self, Cancel.self,
    ] }

    /// The command line (BGTaskCommandLine's VerbLine: no ArgumentParser, whose FoundationEssentials would be
    /// in the package only for bgtaskctl, docs/performance.md row 8).
    static let line = VerbLine(
        command: "bgtaskctl",
        abstract: "Control the app-lifecycle daemon bgtaskd: app states, background tasks, refresh policy.",
        discussion: """
            Read verbs (list, status, assertions, explain, monitor, stats, conditions) take --json. \
            Every verb takes --socket PATH (default: $BGTASKD_SOCKET, else \(GlobalOptions.defaultSocket)). \
            Exit status as systemctl's: 0 on success; 1 on error, with a one-line message on stderr; \
            2 on a usage error; 3 from status when the app is not running; hold exits with the status of its command.
            """,
        version: "0.1.0",
        verbs: verbs.map { $0.verb }
    )

    /// Parses and runs, turning every failure into `bgtaskctl: message` on stderr and exit status 1,
    /// 2 for usage errors (systemctl's statuses, not ArgumentParser's 64).
    static func main() {
        let arguments = hoistingGlobalOptions(Array(CommandLine.arguments.dropFirst()))
        do {
            let parsed = try line.parse(arguments).get()
            guard let type = verbs.first(where: { $0.verb.name == parsed.verb }) else { Glibc.exit(2) }
            let command = try type.init(parsed)
            try command.run()
            Glibc.exit(0)
        } catch let stop as VerbLine.Stop {
            switch stop {
            case .help(let text):
                Output.out(text)
                Glibc.exit(0)
            case .usage(let message):
                Output.err("bgtaskctl: " + message)
                Glibc.exit(2)
            }
        } catch let error as CtlError {
            Output.err("bgtaskctl: \(error.message)")
            Glibc.exit(error.status)
        } catch let code as ExitStatus {
            Glibc.exit(code.status)
        } catch {
            Output.err("bgtaskctl: \(error)")
            Glibc.exit(1)
        }
    }
}

/// A verb: its command line, its options and arguments read from the parsed line, and what it does.
protocol CtlVerb {
    static var verb: VerbLine.Verb { get }
    /// Reads the parsed line; throws a usage error for a value that does not fit.
    init(_ parsed: VerbLine.Parsed) throws(VerbLine.Stop)
    func run() throws
}

/// Ends bgtaskctl with a status and nothing more to say (status 3, hold's command's status).
struct ExitStatus: Error {
    var status: Int32
    init(_ status: Int32) { self.status = status }
}

typealias Option = CommandLineSpec.Option
typealias Argument = VerbLine.Argument

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
            } else if a.hasPrefix("--socket=") || a == "--json" || a == "--no-legend" || a == "--no-pager" {
                leading.append(a)
                i += 1
            } else {
                break
            }
        }
        guard !leading.isEmpty, i < arguments.count, !arguments[i].hasPrefix("-") else { return arguments }
        return [arguments[i]] + leading + arguments[(i + 1)...]
    }
}

/// A failure with the one line to print after `bgtaskctl: `, and the exit status (1; 2 for usage errors).
struct CtlError: Error {
    var message: String
    var status: Int32 = 1
    init(_ message: String, status: Int32 = 1) {
        self.message = message
        self.status = status
    }
}

/// App IDs as SPEC §9 defines them (1–255 characters of `A-Za-z0-9._-`): anything else is a usage error,
/// found before the daemon is asked.
enum AppIDSyntax {
    static func problem(_ id: String) -> String? {
        if id.isEmpty { return "an app ID cannot be empty" }
        if id.utf8.count > 255 { return "an app ID has at most 255 characters" }
        let allowed = id.utf8.allSatisfy { c in
            (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) || c == 0x2e || c == 0x5f || c == 0x2d
        }
        return allowed ? nil : "an app ID consists of the letters A-Z and a-z, digits, '.', '_' and '-'"
    }

    /// Throws the usage error (exit status 2) for an invalid ID.
    static func check(_ id: String) throws(CtlError) {
        if let problem = problem(id) { throw CtlError("Invalid app ID '\(id)': \(problem).", status: 2) }
    }
}

/// Options every verb takes.
struct GlobalOptions {
    static let defaultSocket = "/run/bgtaskd/io.bgtaskd"

    static let options: [Option] = [
        Option("socket", help: "The daemon's socket (default: $BGTASKD_SOCKET, else \(defaultSocket)).", valueName: "path"),
        // Accepted as systemctl accepts it; bgtaskctl never pipes its output into a pager.
        .flag("no-pager", help: "Do not pipe output into a pager (bgtaskctl never does)."),
    ]

    var socket: String?

    init(_ parsed: VerbLine.Parsed) { socket = parsed.options["socket"] }

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
struct JSONOptions {
    static let options: [Option] = [
        .flag("json", help: "Print the daemon's reply as JSON (keys sorted; indented on a terminal, one line otherwise)."),
    ]

    var json: Bool

    init(_ parsed: VerbLine.Parsed) { json = parsed.flag("json") }

    /// Prints `reply` as JSON.
    func print(_ reply: [String: JSON], terminal: Terminal) {
        Output.line(terminal.isTTY ? JSONText.pretty(.object(reply)) : JSONText.compact(.object(reply)))
    }
}

/// `--no-legend` on table verbs.
struct LegendOptions {
    static let options: [Option] = [.flag("no-legend", help: "Print neither the column headers nor the footer.")]

    var noLegend: Bool

    init(_ parsed: VerbLine.Parsed) { noLegend = parsed.flag("no-legend") }
}

/// One connection to the daemon, with errors turned into one-line messages.
struct Client {
    let connection: VarlinkClientConnection
    let socket: String

    /// Calls an `io.bgtaskd.Manager` method with its parameters (the contract's struct).
    @discardableResult
    func manager(_ method: ManagerMethod, _ parameters: some WireMessage = WireEmpty()) throws(CtlError) -> [String: JSON] {
        try call(method.qualifiedName, parameters.json)
    }

    /// Calls an `io.bgtaskd.Manager` method and reads its reply once with the contract's reply type of the
    /// method; also returns the reply as sent, for `--json` (printed as the daemon sent it).
    func manager<Reply: WireMessage>(
        _ method: ManagerMethod, _ parameters: some WireMessage = WireEmpty(), reply: Reply.Type
    ) throws(CtlError) -> (reply: Reply, sent: [String: JSON]) {
        let sent = try manager(method, parameters)
        return (try Self.read(Reply.self, sent, of: method), sent)
    }

    /// `sent` read as `method`'s reply, or the one line that says which field did not fit.
    static func read<Reply: WireMessage>(_ type: Reply.Type, _ sent: [String: JSON], of method: ManagerMethod) throws(CtlError) -> Reply {
        guard method.replyType == Reply.self else { throw CtlError("\(Reply.self) is not the reply of \(method.rawValue)") }
        do {
            return try Reply(json: sent)
        } catch {
            throw CtlError("Cannot read bgtaskd's reply to \(method.rawValue): \(error.description) (a bgtaskd of another version?).")
        }
    }

    @discardableResult
    func call(_ method: String, _ parameters: [String: JSON] = [:]) throws(CtlError) -> [String: JSON] {
        let appId = WireAppID.optional(parameters)
        if let appId { try AppIDSyntax.check(appId) }
        do {
            return try connection.call(method, parameters)
        } catch {
            let manager = method.hasPrefix(ManagerMethod.interface + ".")
                ? ManagerMethod(rawValue: String(method.dropFirst(ManagerMethod.interface.count + 1))) : nil
            throw CtlError(ErrorText.describe(error, socket: socket, method: manager, appId: appId))
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
enum Switch: String, CaseIterable {
    case on, off
    var enabled: Bool { self == .on }
}

/// A value that must be one of an enum's raw values, or the usage error that lists them.
func choice<T: RawRepresentable & CaseIterable>(_ value: String, _ type: T.Type, for spelling: String) throws(VerbLine.Stop) -> T
where T.RawValue == String {
    guard let v = T(rawValue: value) else {
        throw VerbLine.invalidValue(value, for: spelling, oneOf: T.allCases.map(\.rawValue))
    }
    return v
}

/// Parses `--payload`: a JSON object (the interfaces take `payload: ?object`).
func parsePayload(_ text: String?) throws(CtlError) -> JSON? {
    guard let text else { return nil }
    let value: JSON
    do { value = try JSON.parse(text) } catch { throw CtlError("--payload: \(error.description)") }
    guard case .object = value else { throw CtlError("--payload must be a JSON object") }
    return value
}
