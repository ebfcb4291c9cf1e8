import BGTaskModel
package import BGTaskProtocol

// Pure renderers: a daemon reply in, read once with the contract's reply type of its method
// (`ManagerWire`), lines out; a field renamed in the contract breaks this build. States, decisions and
// reasons are `WireEnum`s: one this build does not know is printed as the daemon sent it. Times of day
// come in already formatted through `clock`, so that these stay free of the time zone.

/// A recorded decision, from a `Decision` of the interface or a journal entry.
package struct DecisionRecord: Equatable {
    package var realtimeUSec: Int64?
    package var appId: String?
    package var decision: String
    package var reason: String
    package var message: String

    package init(realtimeUSec: Int64?, appId: String?, decision: String, reason: String, message: String) {
        self.realtimeUSec = realtimeUSec
        self.appId = appId
        self.decision = decision
        self.reason = reason
        self.message = message
    }

    /// From an `io.bgtaskd.Manager` `Decision`.
    package init(_ d: ManagerWire.Decision) {
        self.init(
            realtimeUSec: d.realtimeUSec, appId: d.appId, decision: d.decision.rawValue, reason: d.reason.rawValue,
            message: d.message
        )
    }

    /// From one `journalctl -o json` entry (MESSAGE may be a byte array when it is not UTF-8).
    package init?(journalEntry e: [String: JSON]) {
        let message: String
        switch e["MESSAGE"] {
        case .string(let s)?: message = s
        case .array(let bytes)?: message = String(decoding: bytes.compactMap { $0.intValue.flatMap { UInt8(exactly: $0) } }, as: UTF8.self)
        default: message = ""
        }
        let field = { (name: String) in e[name]?.stringValue }
        let time = field("__REALTIME_TIMESTAMP").flatMap { Int64($0) }
        guard time != nil || !message.isEmpty else { return nil }
        self.init(
            realtimeUSec: time, appId: field("BGTASKD_APP"), decision: field("BGTASKD_DECISION") ?? "-",
            reason: field("BGTASKD_REASON") ?? "-", message: message
        )
    }
}

package enum Render {
    package typealias Clock = (Int64) -> String

    // MARK: list

    package static func appsTable(_ apps: [ManagerWire.AppInfo]) -> Table {
        // App IDs are never cut (SPEC §12): they are what the user types next.
        let columns = [
            Table.Column(header: "APP"), Table.Column(header: "NAME", shrinkable: true),
            Table.Column(header: "STATE"), Table.Column(header: "PID", alignRight: true),
            Table.Column(header: "ASSERTIONS", alignRight: true), Table.Column(header: "REFRESH"),
            Table.Column(header: "REMAINING", alignRight: true), Table.Column(header: "BUCKET"),
        ]
        let rows: [[Table.Cell]] = apps.map { a in
            [
                .init(a.appId), .init(a.name), stateCell(a.state), .init(a.pid.map(String.init) ?? "-"),
                .init(String(a.assertions.count)), .init(a.refreshStatus.rawValue), .init(remaining(a.backgroundTimeRemainingUSec)),
                .init(a.bucket ?? "-"),
            ]
        }
        return Table(columns: columns, rows: rows)
    }

    /// A state, coloured when it is one this build knows.
    static func stateCell(_ state: WireEnum<AppState>) -> Table.Cell {
        .init(state.rawValue, Style.forState(state.known))
    }

    package static func list(_ reply: ManagerWire.ListAppsReply, width: Int?, color: Bool, legend: Bool) -> [String] {
        let apps = reply.apps
        if apps.isEmpty { return legend ? ["No apps."] : [] }
        var lines = appsTable(apps).render(width: width, color: color, header: legend)
        if legend { lines += ["", "\(apps.count) app\(apps.count == 1 ? "" : "s") listed."] }
        return lines
    }

    /// `list --running`: the positions of the apps that have a process, most recently in the foreground
    /// first (applied to the typed apps and to the reply as sent, for `--json`).
    package static func runningOrder(_ apps: [ManagerWire.AppInfo]) -> [Int] {
        apps.indices.filter { apps[$0].state.known != .notRunning }.sorted { i, j in
            let x = apps[i].lastForegroundUSec ?? .min
            let y = apps[j].lastForegroundUSec ?? .min
            return x != y ? x > y : i < j
        }
    }

    package static func runningList(_ apps: [ManagerWire.AppInfo], nowUSec: Int64, width: Int?, color: Bool, legend: Bool) -> [String] {
        if apps.isEmpty { return legend ? ["No running apps."] : [] }
        // SPEC §15 (the App Switcher): a column saying which apps have a scene snapshot, when any has.
        let snapshots = apps.map { $0.scenes.filter { $0.snapshotPath != nil }.count }
        let anySnapshot = snapshots.contains { $0 > 0 }
        var columns = [
            Table.Column(header: "APP"), Table.Column(header: "STATE"), Table.Column(header: "PID", alignRight: true),
            Table.Column(header: "LAST FOREGROUND", alignRight: true),
        ]
        if anySnapshot { columns.append(Table.Column(header: "SNAPSHOT")) }
        columns.append(Table.Column(header: "NAME", shrinkable: true))
        let table = Table(
            columns: columns,
            rows: apps.map { a in
                let since: String
                if a.state.known?.isForeground == true {
                    since = "now"
                } else if let t = a.lastForegroundUSec {
                    since = Durations.format(usec: max(0, nowUSec - t)) + " ago"
                } else {
                    since = "never"
                }
                var row: [Table.Cell] = [.init(a.appId), stateCell(a.state), .init(a.pid.map(String.init) ?? "-"), .init(since)]
                if anySnapshot {
                    let n = a.scenes.filter { $0.snapshotPath != nil }.count
                    row.append(.init(n == 0 ? "-" : n == 1 ? "yes" : "yes (\(n))"))
                }
                return row + [.init(a.name)]
            })
        var lines = table.render(width: width, color: color, header: legend)
        if legend { lines += ["", "\(apps.count) running app\(apps.count == 1 ? "" : "s") listed, most recently used first."] }
        return lines
    }

    /// `refresh` without arguments: every app's own setting and its status, with the cause when not available.
    package static func refreshTable(
        _ reply: ManagerWire.ListAppsReply, settings: ManagerWire.Settings, width: Int?, color: Bool, legend: Bool
    ) -> [String] {
        let apps = reply.apps
        var lines: [String] = []
        if legend {
            let global = settings.backgroundAppRefresh.rawValue
            let lowPower = settings.lowPowerMode ? "on" : "off"
            let network = settings.network.rawValue
            lines.append("Background App Refresh: \(global); low power mode: \(lowPower); network: \(network)")
            lines.append("")
        }
        if apps.isEmpty { return lines + (legend ? ["No apps."] : []) }
        let table = Table(
            columns: [Table.Column(header: "APP"), Table.Column(header: "SETTING"), Table.Column(header: "STATUS"), Table.Column(header: "WHY")],
            rows: apps.map { a in
                [
                    .init(a.appId), .init(a.refreshSetting ? "on" : "off"),
                    .init(a.refreshStatus.rawValue, a.refreshStatus.known == .available ? .green : .yellow),
                    .init(a.refreshStatusReason?.rawValue ?? "-"),
                ]
            })
        return lines + table.render(width: width, color: color, header: legend)
    }

    /// The line that says decisions are not enforced, when `FreezerBackend=none` (Settings or Stats).
    package static func dryRunNotice(dryRun: Bool?, freezerBackend: String?) -> String? {
        guard dryRun == true || freezerBackend == "none" else { return nil }
        return "Dry run: FreezerBackend=none, decisions are recorded but no app is frozen, thawed or killed."
    }

    package static func dryRunNotice(_ s: ManagerWire.Settings) -> String? {
        dryRunNotice(dryRun: s.dryRun, freezerBackend: s.freezerBackend)
    }

    package static func dryRunNotice(_ s: ManagerWire.DaemonStats) -> String? {
        dryRunNotice(dryRun: s.dryRun, freezerBackend: s.freezerBackend)
    }

    /// `status`'s freezer field: the backend in force and why.
    package static func freezerText(_ settings: ManagerWire.Settings) -> String {
        var text = settings.freezerBackend
        if dryRunNotice(settings) != nil { text += " — DRY RUN, nothing is frozen, thawed or killed" }
        if let why = settings.freezerBackendReason, !why.isEmpty { text += "\n" + why }
        return text
    }

    // MARK: assertions

    package static func assertions(_ reply: ManagerWire.ListAssertionsReply, width: Int?, color: Bool, legend: Bool) -> [String] {
        let list = reply.assertions
        if list.isEmpty { return legend ? ["No assertions."] : [] }
        let table = Table(
            columns: [
                Table.Column(header: "TASK", alignRight: true), Table.Column(header: "APP"),
                Table.Column(header: "NAME", shrinkable: true), Table.Column(header: "REMAINING", alignRight: true),
                Table.Column(header: "EXPIRING"),
            ],
            rows: list.map { a in
                [
                    .init(a.taskId.description), .init(a.appId), .init(a.name ?? "-"), .init(remaining(a.remainingUSec)),
                    a.expiring ? .init("yes", .red) : .init("no"),
                ]
            }
        )
        var lines = table.render(width: width, color: color, header: legend)
        if legend { lines += ["", "\(list.count) assertion\(list.count == 1 ? "" : "s") listed."] }
        return lines
    }

    // MARK: decisions (explain, status, monitor)

    /// Decisions as aligned rows: time, decision, reason, message.
    package static func decisions(_ records: [DecisionRecord], clock: Clock, width: Int?, color: Bool, indent: String = "") -> [String] {
        let table = Table(
            columns: [
                Table.Column(header: "TIME"), Table.Column(header: "DECISION"), Table.Column(header: "REASON"),
                Table.Column(header: "MESSAGE", shrinkable: true),
            ],
            rows: records.map { r in
                [
                    .init(r.realtimeUSec.map(clock) ?? "-"), .init(r.decision, Style.forDecision(r.decision)),
                    .init(r.reason), .init(r.message),
                ]
            }
        )
        return table.render(width: width.map { max(1, $0 - indent.count) }, color: color, header: false).map { indent + $0 }
    }

    /// `journal`: what the journal holds when the daemon has no decision of its own (e.g. it restarted).
    package static func explain(
        _ appId: String, _ reply: ManagerWire.ExplainReply, journal: JournalResult? = nil, clock: Clock, width: Int?, color: Bool
    ) -> [String] {
        let state = reply.state.rawValue
        let stateText = Style.forState(state)?.paint(state, enabled: color) ?? state
        let reasons = reply.reasons.map(DecisionRecord.init)
        let causes = reply.causes
        var lines: [String]
        if !reasons.isEmpty {
            lines = ["\(appId) is \(stateText) because of (oldest first):"]
                + decisions(reasons, clock: clock, width: width, color: color, indent: "  ")
        } else if case .entries(let earlier)? = journal, !earlier.isEmpty {
            lines = ["\(appId) is \(stateText). The daemon has recorded nothing that explains it since it started; the journal says (oldest first):"]
                + decisions(earlier, clock: clock, width: width, color: color, indent: "  ")
        } else {
            lines = ["\(appId) is \(stateText).", "No recorded decisions explain it."]
            if case .unavailable(let why)? = journal { lines.append("Journal unavailable: \(why)") }
        }
        if !causes.isEmpty {
            lines.append("Also:")
            lines += causes.map { "  " + $0 }
        }
        return lines
    }

    /// One line per decision for `monitor`.
    package static func monitorLine(_ reply: ManagerWire.MonitorReply, clock: Clock, color: Bool) -> String {
        let r = DecisionRecord(reply.decision)
        let decision = r.decision.padding(to: 13)
        var fields = [
            r.realtimeUSec.map(clock) ?? "-", r.appId ?? "-",
            Style.forDecision(r.decision)?.paint(decision, enabled: color) ?? decision, r.reason, r.message,
        ]
        // The scene whose change caused it (SPEC §15), last: the columns before it stay where they were.
        if let scene = reply.decision.scene { fields.append("[scene \(scene)]") }
        return fields.joined(separator: "  ")
    }
}

extension String {
    package func padding(to n: Int) -> String {
        count >= n ? self : self + String(repeating: " ", count: n - count)
    }
}
