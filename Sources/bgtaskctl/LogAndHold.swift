import BGTaskClientCore
import BGTaskCommandLine
import BGTaskCtlKit
import BGTaskProtocol

#if canImport(Glibc)
import Glibc
#endif

struct Log: CtlVerb {
    static let verb = VerbLine.Verb(
        "log",
        abstract: "Show the daemon's journal, or one app's decisions: journalctl -t bgtaskd [BGTASKD_APP=APP] [ARGS…].",
        usage: "bgtaskctl log [<app>] [<journalctl-args> ...]",
        discussion: "Arguments after the app (or all of them, if the first starts with '-') go to journalctl as they are: -f, -n 50, -o json, --since today…",
        // --socket is accepted like on every verb, though journalctl needs no socket.
        options: GlobalOptions.options,
        arguments: [Argument("arguments", help: "An app ID, then any journalctl arguments.", repeating: true)],
        passthrough: true)

    var arguments: [String]

    init(_ p: VerbLine.Parsed) { arguments = p.arguments }

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
        // Everything else goes to journalctl, but a first -h is ours (VerbLine answers it).
        let argv = Self.journalctlArguments(arguments)
        let why = Processes.exec(argv)
        throw CtlError("cannot run journalctl: \(why)")
    }
}

struct Hold: CtlVerb {
    static let verb = VerbLine.Verb(
        "hold",
        abstract: "Run a command while holding a manager hold on an app, like systemd-inhibit (Manager.Hold).",
        usage: "bgtaskctl hold --app <app> [--name <name>] -- <command> ...",
        discussion: """
            Takes a manager hold on the app (io.bgtaskd.Manager.Hold; root or ControlGroup=): the app keeps running \
            in the background, without a time budget, for as long as COMMAND runs; a suspended app is thawed. \
            The hold lives exactly as long as bgtaskctl's connection: when COMMAND ends, or if bgtaskctl dies, the \
            daemon releases it. Exits with COMMAND's status (128+N if signal N killed it). SIGINT and SIGTERM sent \
            to bgtaskctl are passed on to COMMAND. A refused hold runs nothing and exits 1; if the app is terminated \
            while held, bgtaskctl says so at once and exits 1 when COMMAND ends; a COMMAND that cannot be started \
            exits 127 (not found) or 126.
            """,
        options: GlobalOptions.options + [
            Option("app", help: "The app to hold."), Option("name", help: "The hold's name (default: the command line)."),
        ],
        arguments: [Argument("command", help: "The command to run and its arguments.", repeating: true)],
        passthrough: true)

    var global: GlobalOptions
    var app: String
    var name: String?
    var command: [String]

    init(_ p: VerbLine.Parsed) throws(VerbLine.Stop) {
        global = GlobalOptions(p)
        guard let app = p.options["app"] else { throw .usage("Missing expected argument '--app <app>'") }
        self.app = app
        name = p.options["name"]
        command = p.arguments
        try validate()
    }

    var commandLine: [String] {
        command.first == "--" ? Array(command.dropFirst()) : command
    }

    func validate() throws(VerbLine.Stop) {
        guard !commandLine.isEmpty else { throw .usage("hold needs a command: hold --app APP -- COMMAND…") }
    }

    func run() throws {
        try AppIDSyntax.check(app)
        let argv = commandLine
        let client = try global.connect()
        let holdName = name ?? String(argv.joined(separator: " ").prefix(200))
        let first: VarlinkReply
        do {
            try client.connection.send(
                VarlinkCall(ManagerMethod.hold, ManagerWire.Hold(appId: app, name: holdName), more: true))
            first = try client.connection.readReply()
        } catch {
            throw CtlError("Cannot hold \(app): " + ErrorText.describe(error, socket: client.socket))
        }
        if let error = first.error {
            throw CtlError(ErrorText.remote(VarlinkError(error, first.parameters), method: .hold, appId: app))
        }
        // The rest of the call's replies come only if the hold is lost: read them beside the command.
        let watcher = HoldWatcher(connection: client.connection, app: app, socket: client.socket)
        watcher.start()

        let status: Int32
        do {
            status = try Processes.runForwardingSignals(argv)
        } catch {
            Output.err("bgtaskctl: cannot run \(argv[0]): \(error.message)")
            // As a shell says it: 127 for a command not found, 126 for one that cannot be run.
            throw ExitStatus(error.message == String(cString: strerror(ENOENT)) ? 127 : 126)
        }
        if watcher.lost { throw ExitStatus(1) }
        // Exiting closes the connection, which ends the hold.
        throw ExitStatus(status)
    }
}

/// Reads the `Hold` call's further replies on a thread of its own: one comes only when the hold is lost
/// (the app was terminated), and is reported at once.
final class HoldWatcher: @unchecked Sendable {
    // @unchecked: `connection` is used only by the thread once started; `lostFlag` is atomic enough for a
    // word written once before the main thread reads it after waitpid (a syscall, a full barrier).
    private let connection: VarlinkClientConnection
    private let app: String
    private let socket: String
    private var lostFlag: Int32 = 0
    private var thread = pthread_t()

    init(connection: VarlinkClientConnection, app: String, socket: String) {
        self.connection = connection
        self.app = app
        self.socket = socket
    }

    var lost: Bool { lostFlag != 0 }

    func start() {
        let context = Unmanaged.passRetained(self).toOpaque()
        pthread_create(&thread, nil, { raw in
            guard let raw else { return nil }
            let watcher = Unmanaged<HoldWatcher>.fromOpaque(raw).takeRetainedValue()
            watcher.watch()
            return nil
        }, context)
        pthread_detach(thread)
    }

    private func watch() {
        let text: String
        do {
            let reply = try connection.readReply()
            guard let error = reply.error else { return }
            text = ErrorText.remote(VarlinkError(error, reply.parameters), method: .hold, appId: app)
        } catch {
            text = "The hold on \(app) ended: " + ErrorText.describe(error, socket: socket)
        }
        lostFlag = 1
        Output.err("bgtaskctl: \(text)")
    }
}
