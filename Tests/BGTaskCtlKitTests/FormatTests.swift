import BGTaskCtlKit
import Testing

// bgtaskctl's pure formatters, on the same inputs and with the same expectations the integration tests
// once checked through a hidden verb of the binary.

@Suite struct DurationTests {
    @Test(arguments: [
        (Int64(0), "0s"), (250, "250us"), (300_000, "300ms"), (999_500, "1s"), (5_000_000, "5s"), (29_500_000, "29.5s"),
        (59_950_000, "1min"), (250_000_000, "4min 10s"), (3_723_000_000, "1h 2min"), (90_000_000_000, "1d 1h"),
    ])
    func durations(usec: Int64, text: String) {
        #expect(Durations.format(usec: usec) == text)
    }
}

@Suite struct TableTests {
    /// Tab-separated, the first line the header: a leading `>` marks a right-aligned column, a trailing `*`
    /// a shrinkable one; a `STATE` column is coloured by state.
    static let text = "APP*\tSTATE\t>PID\n"
        + "org.example.AVeryLongApplicationIdentifier\tactive\t12\n"
        + "org.example.Mail\tsuspended\t4242\n"

    static func table(_ text: String = text) -> Table {
        let lines = text.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        let columns = (lines.first ?? []).map { h -> Table.Column in
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
        return Table(columns: columns, rows: Array(rows))
    }

    @Test func withoutWidthIsNotTruncated() {
        let lines = Self.table().render(width: nil, color: false)
        #expect(lines[0].split(separator: " ") == ["APP", "STATE", "PID"])
        #expect(lines[1].contains("org.example.AVeryLongApplicationIdentifier"))
        #expect(lines.allSatisfy { !$0.hasSuffix(" ") }, "no trailing spaces")
        // PID right-aligned: every line ends at the same column.
        #expect(Set(lines.map(\.count)).count == 1)
        #expect(!lines.joined().contains("\u{1B}["))
    }

    @Test func fitsAWidth() {
        let lines = Self.table().render(width: 40, color: false)
        #expect(lines.map(\.count).max() ?? 0 <= 40, "\(lines)")
        #expect(lines[1].contains("…") && lines[1].hasPrefix("org.example.AVery"))
        #expect(lines[2].contains("suspended") && lines[2].hasSuffix("4242"))
    }

    @Test func coloursStatesOnlyWhenAsked() {
        let text = Self.table().render(width: nil, color: true).joined(separator: "\n")
        #expect(text.contains("\u{1B}[32mactive\u{1B}[0m"))
        #expect(text.contains("\u{1B}[34msuspended\u{1B}[0m"))
    }
}
