package import BGTaskClientCore
package import BGTaskModel
package import BGTaskProtocol

// Pure formatting: no I/O, no clock, no environment. Everything the terminal decides (width, colour)
// comes in as a parameter, so the same input always prints the same text.

/// Human-readable durations, in the spirit of systemd's `format_timespan`.
package enum Durations {
    /// `250us`, `300ms`, `5s`, `29.5s`, `4min 10s`, `1h 2min`, `2d 3h`: at most two units, rounded
    /// to the last one shown.
    package static func format(usec: Int64) -> String {
        if usec < 0 { return usec == .min ? "-" + format(usec: .max) : "-" + format(usec: -usec) }
        if usec < 1_000 { return usec == 0 ? "0s" : "\(usec)us" }
        let ms = usec / 1_000 + (usec % 1_000 >= 500 ? 1 : 0)
        if ms < 1_000 { return "\(ms)ms" }
        let tenths = rounded(usec, 100_000)
        if tenths < 600 { return tenths % 10 == 0 ? "\(tenths / 10)s" : "\(tenths / 10).\(tenths % 10)s" }
        let seconds = rounded(usec, 1_000_000)
        if seconds < 3_600 { return pair(seconds / 60, "min", seconds % 60, "s") }
        let minutes = rounded(usec, 60_000_000)
        if minutes < 24 * 60 { return pair(minutes / 60, "h", minutes % 60, "min") }
        let hours = rounded(usec, 3_600_000_000)
        return pair(hours / 24, "d", hours % 24, "h")
    }

    /// `usec` divided by `unit`, rounded half up, without overflowing near `Int64.max`.
    private static func rounded(_ usec: Int64, _ unit: Int64) -> Int64 {
        usec / unit + (usec % unit >= unit / 2 ? 1 : 0)
    }

    private static func pair(_ major: Int64, _ majorUnit: String, _ minor: Int64, _ minorUnit: String) -> String {
        minor == 0 ? "\(major)\(majorUnit)" : "\(major)\(majorUnit) \(minor)\(minorUnit)"
    }
}

/// SGR styles; applied only when colour is on.
package enum Style: String, Sendable {
    case green = "32", blue = "34", yellow = "33", red = "31", dim = "2", bold = "1"

    package func paint(_ text: String, enabled: Bool) -> String {
        enabled && !text.isEmpty ? "\u{1B}[\(rawValue)m\(text)\u{1B}[0m" : text
    }

    /// The colour of an app state (SPEC §2 states); none for a state this build does not know (nil).
    package static func forState(_ state: AppState?) -> Style? {
        switch state {
        case .active?: return .green
        case .suspended?: return .blue
        case .background?: return .yellow
        case .notRunning?: return .dim
        case .inactive?, nil: return nil
        }
    }

    /// The colour of a state name as the daemon or the journal spells it.
    package static func forState(_ state: String) -> Style? { forState(AppState(rawValue: state)) }

    /// Decisions that end or refuse something stand out.
    package static func forDecision(_ decision: String) -> Style? {
        switch DecisionKind(rawValue: decision) {
        case .terminate?, .deny?, .expire?: return .red
        default: return nil
        }
    }
}

/// What the terminal allows, decided from facts handed in by the caller.
package enum TerminalPolicy {
    /// Colour only on a terminal, and not when `NO_COLOR` is set (to anything) or `TERM=dumb`.
    package static func useColor(isTTY: Bool, noColor: String?, term: String?) -> Bool {
        isTTY && noColor == nil && term != "dumb"
    }

    /// The width tables must fit: `COLUMNS` when it is a positive number, else the terminal's width;
    /// nil (no truncation) when stdout is not a terminal.
    package static func width(columnsEnv: String?, isTTY: Bool, ttyColumns: Int?) -> Int? {
        if let columnsEnv, let n = Int(columnsEnv), n > 0 { return n }
        guard isTTY, let ttyColumns, ttyColumns > 0 else { return nil }
        return ttyColumns
    }
}

/// A table laid out to fit a width.
package struct Table {
    package struct Column {
        package var header: String
        /// Numbers read better right-aligned.
        package var alignRight = false
        /// Free text (ids, names, messages) may be cut with `…` to fit the width.
        package var shrinkable = false
        package init(header: String, alignRight: Bool = false, shrinkable: Bool = false) {
            self.header = header
            self.alignRight = alignRight
            self.shrinkable = shrinkable
        }
    }

    package struct Cell: ExpressibleByStringLiteral {
        package var text: String
        package var style: Style?
        package init(_ text: String, _ style: Style? = nil) {
            self.text = text
            self.style = style
        }
        package init(stringLiteral value: String) { self.init(value) }
    }

    /// Space between columns; a table that does not fit first gives up one of the two.
    package static let gap = 2
    /// A shrinkable column is first cut to no less than this (or its natural width if smaller)…
    package static let minimumShrunkWidth = 8
    /// …then, if the table still does not fit, to this; other columns then lose the part of their
    /// header wider than their data. Data in columns that are not shrinkable is never cut.
    package static let lastResortWidth = 4

    package var columns: [Column]
    package var rows: [[Cell]]

    package init(columns: [Column], rows: [[Cell]]) {
        self.columns = columns
        self.rows = rows
    }

    /// Column widths and the gap between columns: natural widths with a gap of 2; if that is wider than
    /// `width` (nil: no limit), a gap of 1; then the widest columns that may give something narrowed one
    /// by one until the table fits. A table that cannot fit keeps its minimum widths.
    package func layout(fitting width: Int?, header: Bool) -> (widths: [Int], gap: Int) {
        let data = columns.indices.map { i in rows.map { i < $0.count ? $0[i].text.count : 0 }.max() ?? 0 }
        var widths = columns.indices.map { i in max(data[i], header ? columns[i].header.count : 0) }
        guard let width else { return (widths, Self.gap) }
        let total = { (gap: Int) in widths.reduce(0, +) + gap * max(0, widths.count - 1) }
        if total(Self.gap) <= width { return (widths, Self.gap) }
        let gap = 1
        let firstFloor = widths.indices.map { i in
            columns[i].shrinkable ? min(widths[i], max(Self.minimumShrunkWidth, header ? columns[i].header.count : 0)) : widths[i]
        }
        let lastFloor = widths.indices.map { i in
            columns[i].shrinkable ? min(widths[i], Self.lastResortWidth) : max(1, data[i])
        }
        for floor in [firstFloor, lastFloor] {
            var excess = total(gap) - width
            while excess > 0 {
                // The widest column that may still give something.
                var pick: Int?
                for i in widths.indices where widths[i] > floor[i] {
                    if pick.map({ widths[i] > widths[$0] }) ?? true { pick = i }
                }
                guard let i = pick else { break }
                widths[i] -= 1
                excess -= 1
            }
        }
        return (widths, gap)
    }

    /// The rendered lines, without trailing spaces.
    package func render(width: Int?, color: Bool, header: Bool = true) -> [String] {
        let (widths, gap) = layout(fitting: width, header: header)
        var lines: [String] = []
        if header {
            lines.append(line(columns.map { Cell($0.header) }, widths: widths, gap: gap, color: false))
        }
        for row in rows { lines.append(line(row, widths: widths, gap: gap, color: color)) }
        return lines
    }

    private func line(_ cells: [Cell], widths: [Int], gap: Int, color: Bool) -> String {
        var out = ""
        let last = min(cells.count, widths.count) - 1
        for i in 0..<(last + 1) {
            let w = widths[i]
            let text = Self.truncate(cells[i].text, to: w)
            let pad = String(repeating: " ", count: max(0, w - text.count))
            let painted = cells[i].style?.paint(text, enabled: color) ?? text
            if i > 0 { out += String(repeating: " ", count: gap) }
            if columns[i].alignRight {
                out += pad + painted
            } else {
                out += painted + (i == last ? "" : pad)
            }
        }
        return out
    }

    /// `text` cut to `width` characters, the last one an ellipsis when something was cut.
    package static func truncate(_ text: String, to width: Int) -> String {
        guard text.count > width else { return text }
        guard width > 0 else { return "" }
        return String(text.prefix(width - 1)) + "…"
    }
}

/// Label/value blocks like `systemctl status`: labels right-aligned on a common column.
package enum Fields {
    package static func render(_ pairs: [(label: String, value: String)]) -> [String] {
        let w = pairs.map { $0.label.count }.max() ?? 0
        var lines: [String] = []
        for (label, value) in pairs {
            let pad = String(repeating: " ", count: w - label.count)
            var first = true
            // A multi-line value continues under its first line.
            for part in value.split(separator: "\n", omittingEmptySubsequences: false) {
                if first {
                    lines.append(label.isEmpty ? pad + "  " + part : pad + label + ": " + part)
                    first = false
                } else {
                    lines.append(String(repeating: " ", count: w + 2) + part)
                }
            }
        }
        return lines
    }
}

/// JSON output for `--json`: keys sorted, so the text is stable.
package enum JSONText {
    package static func compact(_ value: JSON) -> String { value.serialized() }

    package static func pretty(_ value: JSON, indent: Int = 0) -> String {
        let inner = String(repeating: "  ", count: indent + 1)
        let outer = String(repeating: "  ", count: indent)
        switch value {
        case .array(let elements):
            if elements.isEmpty { return "[]" }
            return "[\n" + elements.map { inner + pretty($0, indent: indent + 1) }.joined(separator: ",\n") + "\n\(outer)]"
        case .object(let members):
            if members.isEmpty { return "{}" }
            let body = members.keys.sorted().compactMap { key -> String? in
                guard let v = members[key] else { return nil }
                return inner + JSON.string(key).serialized() + ": " + pretty(v, indent: indent + 1)
            }
            return "{\n" + body.joined(separator: ",\n") + "\n\(outer)}"
        default:
            return value.serialized()
        }
    }
}

/// One-line error texts in words, as systemctl writes them, with the Varlink error name in parentheses:
/// `Cannot wake org.example.Mail: Low Power Mode is on; turn it off with 'bgtaskctl low-power off'
/// (io.bgtaskd.Manager.Unavailable).` The sentences are BGTaskClient's ``ErrorSentences``.
package enum ErrorText {
    /// `method`/`appId`: the call that failed, so that the sentence says what could not be done to which app.
    package static func describe(_ error: VarlinkClientError, socket: String, method: ManagerMethod? = nil, appId: String? = nil) -> String {
        switch error {
        case .remote(let e): return remote(e, method: method, appId: appId)
        case .connect(let s):
            let why = s.hasPrefix(socket + ": ") ? String(s.dropFirst(socket.count + 2)) : s
            return "Failed to connect to bgtaskd at \(socket): \(why). Is it running? "
                + "Start it with 'systemctl start bgtaskd' (or 'make run' in its source tree), or point --socket/$BGTASKD_SOCKET at it."
        case .io(let s): return "Lost the connection to bgtaskd at \(socket): \(s)."
        }
    }

    /// A sentence for a named error; unknown names keep their parameters as `key=value`.
    package static func remote(_ e: VarlinkError, method: ManagerMethod? = nil, appId: String? = nil) -> String {
        let short = e.name.split(separator: ".").last.map(String.init) ?? e.name
        let p = e.parameters
        var sentence: String
        if let known = ErrorSentences.sentence(for: e, method: method, appId: appId) {
            sentence = known
        } else {
            if p.isEmpty {
                sentence = short
            } else if p.count == 1, let v = p.values.first {
                sentence = "\(short): \(scalarText(v))"
            } else {
                sentence = "\(short): " + p.keys.sorted().compactMap { k in p[k].map { "\(k)=\(scalarText($0))" } }.joined(separator: ", ")
            }
            if let method, let action = ErrorSentences.action(method, app: appId) { sentence = "Cannot \(action): \(sentence)" }
        }
        return "\(sentence) (\(e.name))."
    }

    package static func scalarText(_ v: JSON) -> String {
        if case .string(let s) = v { return s }
        return v.serialized()
    }
}

/// Wait statuses as a shell reports them.
package enum WaitStatus {
    /// The exit code for a `waitpid` status: the child's own code, or 128 + the signal that killed it.
    package static func exitCode(_ status: Int32) -> Int32 {
        let signal = status & 0x7f
        if signal == 0 { return (status >> 8) & 0xff }
        if signal != 0x7f { return 128 + signal }
        return 1  // stopped: not a final status
    }
}
