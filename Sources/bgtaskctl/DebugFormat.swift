import ArgumentParser

#if canImport(Glibc)
import Glibc
#endif

/// Hidden: runs the pure formatters on given input, so the integration tests can check them through
/// the real binary without a daemon (there is no unit-test target for an executable's internals).
struct DebugFormat: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "debug-format",
        abstract: "Exercise the output formatters (for tests).",
        shouldDisplay: false,
        subcommands: [Duration.self, TableCommand.self, ColorCommand.self, WidthCommand.self]
    )

    struct Duration: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "duration", abstract: "Format microsecond counts.")
        @Argument var usec: [Int64]
        func run() {
            Output.lines(usec.map { Durations.format(usec: $0) })
        }
    }

    /// Reads a tab-separated table on stdin: the first line is the header, where a leading `>` marks
    /// a right-aligned column and a trailing `*` a shrinkable one. A `STATE` column is coloured.
    struct TableCommand: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "table", abstract: "Lay out a table read from stdin.")
        @Option var width: Int?
        @Flag var color = false
        @Flag var noHeader = false

        func run() {
            let lines = readStandardInput().split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
            guard let head = lines.first else { return }
            let columns = head.map { h -> Table.Column in
                var name = h
                let right = name.hasPrefix(">")
                if right { name.removeFirst() }
                let shrink = name.hasSuffix("*")
                if shrink { name.removeLast() }
                return Table.Column(header: name, alignRight: right, shrinkable: shrink)
            }
            let rows = lines.dropFirst().map { cells in
                cells.enumerated().map { i, text in
                    Table.Cell(text, i < columns.count && columns[i].header == "STATE" ? Style.forState(text) : nil)
                }
            }
            Output.lines(Table(columns: columns, rows: Array(rows)).render(width: width, color: color, header: !noHeader))
        }
    }

    /// Prints yes or no: whether output would be coloured, with this environment (NO_COLOR, TERM).
    struct ColorCommand: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "color", abstract: "Decide on colour.")
        @Flag(help: "Pretend stdout is a terminal.") var tty = false
        func run() {
            let isTTY = tty || isatty(1) == 1
            Output.line(TerminalPolicy.useColor(isTTY: isTTY, noColor: Terminal.env("NO_COLOR"), term: Terminal.env("TERM")) ? "yes" : "no")
        }
    }

    /// Prints the width tables would fit (or `none`), with this environment (COLUMNS).
    struct WidthCommand: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "width", abstract: "Decide on the table width.")
        @Option(help: "Pretend stdout is a terminal this wide.") var ttyColumns: Int?
        func run() {
            let isTTY = ttyColumns != nil || isatty(1) == 1
            let real = Terminal.current().width
            let width = TerminalPolicy.width(columnsEnv: Terminal.env("COLUMNS"), isTTY: isTTY, ttyColumns: ttyColumns ?? real)
            Output.line(width.map(String.init) ?? "none")
        }
    }
}

private func readStandardInput() -> String {
    var out: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = buf.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { break }
        out += buf[0..<n]
    }
    return String(decoding: out, as: UTF8.self)
}
