import BGTaskCommandLine
import BGTaskModel
import BGTaskCtlKit
import BGTaskProtocol

#if canImport(Glibc)
import Glibc
#endif

// Read verbs: open to every local user (SPEC §10), each with --json.

struct List: CtlVerb {
    static let verb = VerbLine.Verb(
        "list", abstract: "List the apps bgtaskd knows and their states (ListApps); --running: running apps, most recently used first.",
        options: GlobalOptions.options + JSONOptions.options + LegendOptions.options
            + [.flag("running", help: "Only running apps, most recently in the foreground first, with the time since.")])

    var global: GlobalOptions
    var output: JSONOptions
    var legend: LegendOptions
    var running: Bool

    init(_ p: VerbLine.Parsed) {
        global = GlobalOptions(p)
        output = JSONOptions(p)
        legend = LegendOptions(p)
        running = p.flag("running")
    }

    func run() throws {
        let client = try global.connect()
        var (reply, sent) = try client.manager(.listApps, reply: ManagerWire.ListAppsReply.self)
        if running {
            // The same apps in the same order in the reply as sent (for --json) and in the typed one.
            let order = Render.runningOrder(reply.apps)
            let key = ManagerWire.ListAppsReply.fields[0]
            if let apps = sent[key]?.arrayValue, apps.count == reply.apps.count { sent[key] = .array(order.map { apps[$0] }) }
            reply.apps = order.map { reply.apps[$0] }
        }
        let terminal = Terminal.current()
        if output.json { return output.print(sent, terminal: terminal) }
        let settings = try? client.manager(.getSettings, reply: ManagerWire.GetSettingsReply.self).reply.settings
        var lines = running
            ? Render.runningList(reply.apps, nowUSec: MonotonicClock.nowUSec(), width: terminal.width, color: terminal.color, legend: !legend.noLegend)
            : Render.list(reply, width: terminal.width, color: terminal.color, legend: !legend.noLegend)
        // A dry run is said under the table (not with --no-legend, whose output scripts parse).
        if !legend.noLegend, let settings, let dryRun = Render.dryRunNotice(settings) { lines.append(dryRun) }
        Output.lines(lines)
    }
}

/// CLOCK_MONOTONIC, the clock of the daemon's `…USec` instants (it is the same on the whole machine).
enum MonotonicClock {
    static func nowUSec() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1_000
    }
}

struct Status: CtlVerb {
    static let verb = VerbLine.Verb(
        "status", abstract: "Show an app's state, process, assertions, refresh policy and recent decisions (GetApp and the journal).",
        options: GlobalOptions.options + JSONOptions.options
            + [Option("lines", help: "How many journal entries to show (-n as in systemctl; -l is kept).", defaultValue: "10", short: ["n", "l"])],
        arguments: [appArgument])

    var global: GlobalOptions
    var output: JSONOptions
    var app: String
    var lines = 10

    init(_ p: VerbLine.Parsed) throws(VerbLine.Stop) {
        global = GlobalOptions(p)
        output = JSONOptions(p)
        app = p.arguments[0]
        if let text = p.options["lines"] {
            guard let n = Int(text) else { throw .usage("The value '\(text)' is invalid for '-n <lines>'") }
            lines = n
        }
    }

    func run() throws {
        let client = try global.connect()
        let (reply, sent) = try client.manager(.getApp, ManagerWire.GetApp(appId: app), reply: ManagerWire.GetAppReply.self)
        let terminal = Terminal.current()
        let notRunning = reply.app.state.known == .notRunning
        if output.json {
            output.print(sent, terminal: terminal)
        } else {
            let journal = lines > 0 ? JournalReader.recentDecisions(app: app, count: lines) : .entries([])
            let settings = try? client.manager(.getSettings, reply: ManagerWire.GetSettingsReply.self).reply.settings
            Output.lines(
                Render.status(
                    reply, journal: journal, userName: userName(uid:), clock: { LocalTime.format(realtimeUSec: $0) },
                    width: terminal.width, color: terminal.color, settings: settings
                )
            )
        }
        // systemctl's convention: status of a unit that is not running exits 3.
        if notRunning { throw ExitStatus(3) }
    }
}

struct Assertions: CtlVerb {
    static let verb = VerbLine.Verb(
        "assertions", abstract: "List live background-task assertions (ListAssertions).",
        options: GlobalOptions.options + JSONOptions.options + LegendOptions.options)

    var global: GlobalOptions
    var output: JSONOptions
    var legend: LegendOptions

    init(_ p: VerbLine.Parsed) {
        global = GlobalOptions(p)
        output = JSONOptions(p)
        legend = LegendOptions(p)
    }

    func run() throws {
        let (reply, sent) = try global.connect().manager(.listAssertions, reply: ManagerWire.ListAssertionsReply.self)
        let terminal = Terminal.current()
        if output.json { return output.print(sent, terminal: terminal) }
        Output.lines(Render.assertions(reply, width: terminal.width, color: terminal.color, legend: !legend.noLegend))
    }
}

struct Explain: CtlVerb {
    static let verb = VerbLine.Verb(
        "explain", abstract: "Explain why an app is in its state, from the recorded decisions (Explain).",
        options: GlobalOptions.options + JSONOptions.options, arguments: [appArgument])

    var global: GlobalOptions
    var output: JSONOptions
    var app: String

    init(_ p: VerbLine.Parsed) {
        global = GlobalOptions(p)
        output = JSONOptions(p)
        app = p.arguments[0]
    }

    func run() throws {
        try AppIDSyntax.check(app)
        let (reply, sent) = try global.connect().manager(.explain, ManagerWire.ExplainCall(appId: app), reply: ManagerWire.ExplainReply.self)
        let terminal = Terminal.current()
        if output.json { return output.print(sent, terminal: terminal) }
        // After a daemon restart its memory is empty: the journal still has what happened before.
        var earlier: Render.JournalResult?
        if reply.reasons.isEmpty { earlier = JournalReader.recentDecisions(app: app, count: 10, causesOnly: true) }
        Output.lines(
            Render.explain(
                app, reply, journal: earlier, clock: { LocalTime.format(realtimeUSec: $0) }, width: terminal.width,
                color: terminal.color)
        )
    }
}

struct Monitor: CtlVerb {
    static let verb = VerbLine.Verb(
        "monitor", abstract: "Print every decision as it happens, one line each (Monitor); --json prints one JSON object per line.",
        options: GlobalOptions.options + [.flag("json", help: "One JSON object per line (the Monitor replies, keys sorted).")])

    var global: GlobalOptions
    var json: Bool

    init(_ p: VerbLine.Parsed) {
        global = GlobalOptions(p)
        json = p.flag("json")
    }

    func run() throws {
        let client = try global.connect()
        let terminal = Terminal.current()
        let json = self.json
        try client.stream(ManagerMethod.monitor.qualifiedName) { reply in
            if json {
                Output.line(JSONText.compact(.object(reply)))
            } else if let decision = try? Client.read(ManagerWire.MonitorReply.self, reply, of: .monitor) {
                Output.line(Render.monitorLine(decision, clock: { LocalTime.format(realtimeUSec: $0, millis: true) }, color: terminal.color))
            }
            return true
        }
    }
}

struct Stats: CtlVerb {
    static let verb = VerbLine.Verb(
        "stats", abstract: "Show the daemon's counters (Stats).", options: GlobalOptions.options + JSONOptions.options)

    var global: GlobalOptions
    var output: JSONOptions

    init(_ p: VerbLine.Parsed) {
        global = GlobalOptions(p)
        output = JSONOptions(p)
    }

    func run() throws {
        let (reply, sent) = try global.connect().manager(.stats, reply: ManagerWire.StatsReply.self)
        let terminal = Terminal.current()
        if output.json { return output.print(sent, terminal: terminal) }
        Output.lines(Render.stats(reply, sent: sent))
    }
}

/// Recent decisions about one app, from `journalctl`.
enum JournalReader {
    /// `causesOnly`: only the decisions that explain a state (StateCause), as `Explain` lists them.
    static func recentDecisions(app: String, count: Int, causesOnly: Bool = false) -> Render.JournalResult {
        let read = causesOnly ? count * 10 : count
        let argv = ["journalctl", "-t", "bgtaskd", "BGTASKD_APP=\(app)", "-o", "json", "-n", String(read), "-q", "--no-pager"]
        let captured: Processes.Captured
        do { captured = try Processes.capture(argv) } catch {
            return .unavailable("cannot run journalctl: \(error.message)")
        }
        guard captured.status == 0 else {
            let firstLine = String(decoding: captured.stderr, as: UTF8.self).split(separator: "\n").first.map(String.init)
            return .unavailable("journalctl exited with status \(captured.status)" + (firstLine.map { ": \($0)" } ?? ""))
        }
        var records: [DecisionRecord] = []
        for line in captured.stdout.split(separator: UInt8(ascii: "\n")) {
            guard let entry = try? JSON.parse(line), let object = entry.objectValue,
                let record = DecisionRecord(journalEntry: object)
            else { continue }
            if causesOnly, let kind = DecisionKind(rawValue: record.decision), let reason = Reason(rawValue: record.reason),
                !StateCause.explains(kind, reason)
            {
                continue
            }
            records.append(record)
        }
        return .entries(Array(records.suffix(count)))
    }
}
