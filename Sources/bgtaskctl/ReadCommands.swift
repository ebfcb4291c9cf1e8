import ArgumentParser
import BGTaskProtocol

// Read verbs: open to every local user (SPEC §10), each with --json.

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the apps bgtaskd knows and their states (ListApps).")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var output: JSONOptions
    @OptionGroup var legend: LegendOptions

    func run() throws {
        let reply = try global.connect().manager("ListApps")
        let terminal = Terminal.current()
        if output.json { return output.print(reply, terminal: terminal) }
        Output.lines(Render.list(reply, width: terminal.width, color: terminal.color, legend: !legend.noLegend))
    }
}

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show an app's state, process, assertions, refresh policy and recent decisions (GetApp and the journal)."
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var output: JSONOptions
    @Argument(help: "The app's ID.") var app: String
    @Option(name: .shortAndLong, help: "How many journal entries to show.") var lines = 10

    func run() throws {
        let reply = try global.connect().manager("GetApp", ["appId": .string(app)])
        let terminal = Terminal.current()
        if output.json { return output.print(reply, terminal: terminal) }
        let journal = lines > 0 ? JournalReader.recentDecisions(app: app, count: lines) : .entries([])
        Output.lines(
            Render.status(
                reply, journal: journal, userName: userName(uid:), clock: { LocalTime.format(realtimeUSec: $0) },
                width: terminal.width, color: terminal.color
            )
        )
    }
}

struct Assertions: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List live background-task assertions (ListAssertions).")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var output: JSONOptions
    @OptionGroup var legend: LegendOptions

    func run() throws {
        let reply = try global.connect().manager("ListAssertions")
        let terminal = Terminal.current()
        if output.json { return output.print(reply, terminal: terminal) }
        Output.lines(Render.assertions(reply, width: terminal.width, color: terminal.color, legend: !legend.noLegend))
    }
}

struct Explain: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Explain why an app is in its state, from the recorded decisions (Explain).")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var output: JSONOptions
    @Argument(help: "The app's ID.") var app: String

    func run() throws {
        let reply = try global.connect().manager("Explain", ["appId": .string(app)])
        let terminal = Terminal.current()
        if output.json { return output.print(reply, terminal: terminal) }
        Output.lines(
            Render.explain(app, reply, clock: { LocalTime.format(realtimeUSec: $0) }, width: terminal.width, color: terminal.color)
        )
    }
}

struct Monitor: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print every decision as it happens, one line each (Monitor); --json prints one JSON object per line."
    )

    @OptionGroup var global: GlobalOptions
    @Flag(name: .long, help: "One JSON object per line (the Monitor replies, keys sorted).") var json = false

    func run() throws {
        let client = try global.connect()
        let terminal = Terminal.current()
        let json = self.json
        try client.stream(Client.manager + "Monitor") { reply in
            if json {
                Output.line(JSONText.compact(.object(reply)))
            } else if reply["decision"] != nil {
                Output.line(Render.monitorLine(reply, clock: { LocalTime.format(realtimeUSec: $0, millis: true) }, color: terminal.color))
            }
            return true
        }
    }
}

struct Stats: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the daemon's counters (Stats).")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var output: JSONOptions

    func run() throws {
        let reply = try global.connect().manager("Stats")
        let terminal = Terminal.current()
        if output.json { return output.print(reply, terminal: terminal) }
        Output.lines(Render.keyValues(reply.object("stats") ?? [:], labels: Render.statsLabels))
    }
}

/// Recent decisions about one app, from `journalctl`.
enum JournalReader {
    static func recentDecisions(app: String, count: Int) -> Render.JournalResult {
        let argv = ["journalctl", "-t", "bgtaskd", "BGTASKD_APP=\(app)", "-o", "json", "-n", String(count), "-q", "--no-pager"]
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
            records.append(record)
        }
        return .entries(records)
    }
}
