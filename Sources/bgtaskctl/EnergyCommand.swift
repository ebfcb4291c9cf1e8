import BGTaskCommandLine
import BGTaskCtlKit
import BGTaskProtocol

#if canImport(Glibc)
import Glibc
#endif

/// SPEC §16: `bgtaskctl energy [--directory DIR]`.
struct Energy: CtlVerb {
    static let verb = VerbLine.Verb(
        "energy",
        abstract: "List apps by the CPU time they used in the background, with their background wakes (ListApps); "
            + "--directory DIR: per machine and app, from journal files a systemd-journal-remote collector stored.",
        options: GlobalOptions.options + LegendOptions.options + [
            .flag("json", help: "Print the rows as JSON ({\"apps\": [...]}, most costly first)."),
            Option("directory", help: "Read the journal files in DIR (journalctl --directory) instead of asking the daemon."),
        ])

    var global: GlobalOptions
    var legend: LegendOptions
    var json: Bool
    var directory: String?

    init(_ p: VerbLine.Parsed) {
        global = GlobalOptions(p)
        legend = LegendOptions(p)
        json = p.flag("json")
        directory = p.options["directory"]
    }

    func run() throws {
        let terminal = Terminal.current()
        let rows: [EnergyRow]
        if let directory {
            rows = try Self.fleetRows(directory: directory)
        } else {
            let (reply, _) = try global.connect().manager(.listApps, reply: ManagerWire.ListAppsReply.self)
            rows = Render.energyRows(reply.apps)
        }
        if json {
            let value = JSON.object(["apps": .array(rows.map(\.json))])
            return Output.line(terminal.isTTY ? JSONText.pretty(value) : JSONText.compact(value))
        }
        Output.lines(
            Render.energy(rows, fleet: directory != nil, width: terminal.width, color: terminal.color, legend: !legend.noLegend))
    }

    /// bgtaskd's suspend, resume and launch entries in DIR's journal files, summed per machine and app.
    static func fleetRows(directory: String) throws(CtlError) -> [EnergyRow] {
        var st = stat()
        guard stat(directory, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else {
            throw CtlError("\(directory): not a directory")
        }
        let fields = [
            "SYSLOG_IDENTIFIER", "BGTASKD_APP", "BGTASKD_DECISION", "BGTASKD_REASON", "BGTASKD_STATE",
            "BGTASKD_PREVIOUS_STATE", "BGTASKD_BACKGROUND_CPU_USEC", "_MACHINE_ID", "_HOSTNAME",
        ]
        let argv = [
            "journalctl", "--directory", directory, "-o", "json", "--output-fields=" + fields.joined(separator: ","),
            "-q", "--no-pager", "SYSLOG_IDENTIFIER=bgtaskd",
            "BGTASKD_DECISION=suspend", "BGTASKD_DECISION=resume", "BGTASKD_DECISION=launch",
        ]
        let captured: Processes.Captured
        do { captured = try Processes.capture(argv) } catch {
            throw CtlError("cannot run journalctl: \(error.message)")
        }
        guard captured.status == 0 else {
            let first = String(decoding: captured.stderr, as: UTF8.self).split(separator: "\n").first.map(String.init)
            throw CtlError("journalctl --directory \(directory) exited with status \(captured.status)" + (first.map { ": \($0)" } ?? ""))
        }
        var fleet = FleetEnergy()
        for line in captured.stdout.split(separator: UInt8(ascii: "\n")) { fleet.add(line: line) }
        return fleet.sortedRows
    }
}
