package import BGTaskProtocol

// Pure renderers: a daemon reply in, lines out. Times of day come in already formatted through
// `clock`, so that these stay free of the time zone.

extension Dictionary where Key == String, Value == JSON {
    package func string(_ key: String) -> String? { self[key]?.stringValue }
    package func int(_ key: String) -> Int64? { self[key]?.intValue }
    package func bool(_ key: String) -> Bool? { self[key]?.boolValue }
    package func array(_ key: String) -> [JSON] { self[key]?.arrayValue ?? [] }
    package func object(_ key: String) -> [String: JSON]? { self[key]?.objectValue }
}

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

    /// From an `io.bgtaskd.Manager` `Decision` object.
    package init(_ d: [String: JSON]) {
        self.init(
            realtimeUSec: d.int("realtimeUSec"), appId: d.string("appId"), decision: d.string("decision") ?? "-",
            reason: d.string("reason") ?? "-", message: d.string("message") ?? ""
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
        let time = e.string("__REALTIME_TIMESTAMP").flatMap { Int64($0) }
        guard time != nil || !message.isEmpty else { return nil }
        self.init(
            realtimeUSec: time, appId: e.string("BGTASKD_APP"), decision: e.string("BGTASKD_DECISION") ?? "-",
            reason: e.string("BGTASKD_REASON") ?? "-", message: message
        )
    }
}

package enum Render {
    package typealias Clock = (Int64) -> String

    // MARK: list

    package static func appsTable(_ apps: [JSON]) -> Table {
        // App IDs are never cut (SPEC §12): they are what the user types next.
        let columns = [
            Table.Column(header: "APP"), Table.Column(header: "NAME", shrinkable: true),
            Table.Column(header: "STATE"), Table.Column(header: "PID", alignRight: true),
            Table.Column(header: "ASSERTIONS", alignRight: true), Table.Column(header: "REFRESH"),
            Table.Column(header: "REMAINING", alignRight: true),
        ]
        let rows: [[Table.Cell]] = apps.compactMap(\.objectValue).map { a in
            let state = a.string("state") ?? "-"
            return [
                .init(a.string("appId") ?? "-"), .init(a.string("name") ?? ""), .init(state, Style.forState(state)),
                .init(a.int("pid").map(String.init) ?? "-"), .init(String(a.array("assertions").count)),
                .init(a.string("refreshStatus") ?? "-"), .init(remaining(a.int("backgroundTimeRemainingUSec"))),
            ]
        }
        return Table(columns: columns, rows: rows)
    }

    package static func list(_ reply: [String: JSON], width: Int?, color: Bool, legend: Bool) -> [String] {
        let apps = reply.array("apps")
        if apps.isEmpty { return legend ? ["No apps."] : [] }
        var lines = appsTable(apps).render(width: width, color: color, header: legend)
        if legend { lines += ["", "\(apps.count) app\(apps.count == 1 ? "" : "s") listed."] }
        return lines
    }

    /// `list --running`: apps that have a process, most recently in the foreground first.
    package static func runningApps(_ apps: [JSON]) -> [JSON] {
        let running = apps.filter { $0.objectValue?.string("state").map { $0 != "not-running" } ?? false }
        return running.enumerated().sorted { a, b in
            let x = a.element.objectValue?.int("lastForegroundUSec") ?? .min
            let y = b.element.objectValue?.int("lastForegroundUSec") ?? .min
            return x != y ? x > y : a.offset < b.offset
        }.map(\.element)
    }

    package static func runningList(_ reply: [String: JSON], nowUSec: Int64, width: Int?, color: Bool, legend: Bool) -> [String] {
        let apps = reply.array("apps").compactMap(\.objectValue)
        if apps.isEmpty { return legend ? ["No running apps."] : [] }
        let table = Table(
            columns: [
                Table.Column(header: "APP"), Table.Column(header: "STATE"), Table.Column(header: "PID", alignRight: true),
                Table.Column(header: "LAST FOREGROUND", alignRight: true), Table.Column(header: "NAME", shrinkable: true),
            ],
            rows: apps.map { a in
                let state = a.string("state") ?? "-"
                let since: String
                if state == "active" || state == "inactive" {
                    since = "now"
                } else if let t = a.int("lastForegroundUSec") {
                    since = Durations.format(usec: max(0, nowUSec - t)) + " ago"
                } else {
                    since = "never"
                }
                return [
                    .init(a.string("appId") ?? "-"), .init(state, Style.forState(state)), .init(a.int("pid").map(String.init) ?? "-"),
                    .init(since), .init(a.string("name") ?? ""),
                ]
            })
        var lines = table.render(width: width, color: color, header: legend)
        if legend { lines += ["", "\(apps.count) running app\(apps.count == 1 ? "" : "s") listed, most recently used first."] }
        return lines
    }

    /// `refresh` without arguments: every app's own setting and its status, with the cause when not available.
    package static func refreshTable(_ reply: [String: JSON], settings: [String: JSON], width: Int?, color: Bool, legend: Bool) -> [String] {
        let apps = reply.array("apps").compactMap(\.objectValue)
        var lines: [String] = []
        if legend {
            let global = settings.string("backgroundAppRefresh") ?? "-"
            let lowPower = settings.bool("lowPowerMode").map { $0 ? "on" : "off" } ?? "-"
            let network = settings.string("network") ?? "-"
            lines.append("Background App Refresh: \(global); low power mode: \(lowPower); network: \(network)")
            lines.append("")
        }
        if apps.isEmpty { return lines + (legend ? ["No apps."] : []) }
        let table = Table(
            columns: [Table.Column(header: "APP"), Table.Column(header: "SETTING"), Table.Column(header: "STATUS"), Table.Column(header: "WHY")],
            rows: apps.map { a in
                let status = a.string("refreshStatus") ?? "-"
                return [
                    .init(a.string("appId") ?? "-"), .init(a.string("refreshSetting") ?? "-"),
                    .init(status, status == "available" ? .green : .yellow), .init(a.string("refreshStatusReason") ?? "-"),
                ]
            })
        return lines + table.render(width: width, color: color, header: legend)
    }

    /// The line that says decisions are not enforced, when `FreezerBackend=none` (Settings or Stats).
    package static func dryRunNotice(_ object: [String: JSON]) -> String? {
        guard object.bool("dryRun") == true || object.string("freezerBackend") == "none" else { return nil }
        return "Dry run: FreezerBackend=none, decisions are recorded but no app is frozen, thawed or killed."
    }

    /// `status`'s freezer field: the backend in force and why.
    package static func freezerText(_ settings: [String: JSON]) -> String? {
        guard let name = settings.string("freezerBackend") else { return nil }
        var text = name
        if dryRunNotice(settings) != nil { text += " — DRY RUN, nothing is frozen, thawed or killed" }
        if let why = settings.string("freezerBackendReason"), !why.isEmpty { text += "\n" + why }
        return text
    }

    // MARK: assertions

    package static func assertions(_ reply: [String: JSON], width: Int?, color: Bool, legend: Bool) -> [String] {
        let list = reply.array("assertions").compactMap(\.objectValue)
        if list.isEmpty { return legend ? ["No assertions."] : [] }
        let table = Table(
            columns: [
                Table.Column(header: "TASK", alignRight: true), Table.Column(header: "APP"),
                Table.Column(header: "NAME", shrinkable: true), Table.Column(header: "REMAINING", alignRight: true),
                Table.Column(header: "EXPIRING"),
            ],
            rows: list.map { a in
                let expiring = a.bool("expiring") ?? false
                return [
                    .init(a.int("taskId").map(String.init) ?? "-"), .init(a.string("appId") ?? "-"),
                    .init(a.string("name") ?? "-"), .init(remaining(a.int("remainingUSec"))),
                    expiring ? .init("yes", .red) : .init("no"),
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
        _ appId: String, _ reply: [String: JSON], journal: JournalResult? = nil, clock: Clock, width: Int?, color: Bool
    ) -> [String] {
        let state = reply.string("state") ?? "unknown"
        let stateText = Style.forState(state)?.paint(state, enabled: color) ?? state
        let reasons = reply.array("reasons").compactMap(\.objectValue).map(DecisionRecord.init)
        let causes = reply.array("causes").compactMap(\.stringValue)
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
    package static func monitorLine(_ reply: [String: JSON], clock: Clock, color: Bool) -> String {
        let r = DecisionRecord(reply.object("decision") ?? [:])
        let decision = r.decision.padding(to: 13)
        return [
            r.realtimeUSec.map(clock) ?? "-", r.appId ?? "-",
            Style.forDecision(r.decision)?.paint(decision, enabled: color) ?? decision, r.reason, r.message,
        ].joined(separator: "  ")
    }

    // MARK: status

    /// What `status` learned from the journal.
    package enum JournalResult: Equatable {
        case entries([DecisionRecord])
        case unavailable(String)
    }

    /// `settings`: the daemon's GetSettings, for the freezer line (empty: no such line).
    package static func status(
        _ reply: [String: JSON], journal: JournalResult, userName: (Int64) -> String?, clock: Clock, width: Int?, color: Bool,
        settings: [String: JSON] = [:]
    ) -> [String] {
        let app = reply.object("app") ?? [:]
        let appId = app.string("appId") ?? "-"
        let state = app.string("state") ?? "unknown"
        let style = Style.forState(state)
        var title = (style?.paint("●", enabled: color) ?? "●") + " " + appId
        if let name = app.string("name"), !name.isEmpty, name != appId { title += " - " + name }

        var fields: [(label: String, value: String)] = []
        fields.append(("State", style?.paint(state, enabled: color) ?? state))
        fields.append(("PID", app.int("pid").map(String.init) ?? "-"))
        if let uid = app.int("uid") {
            fields.append(("UID", userName(uid).map { "\(uid) (\($0))" } ?? String(uid)))
        } else {
            fields.append(("UID", "-"))
        }
        if let aware = app.bool("lifecycleAware") {
            fields.append(("Lifecycle", aware ? "aware (checks in, receives events)" : "unaware (LifecycleAware=no)"))
        }

        let assertions = app.array("assertions").compactMap(\.objectValue)
        var assertionText = assertions.isEmpty ? "none" : "\(assertions.count)"
        for a in assertions {
            var line = "#\(a.int("taskId").map(String.init) ?? "?")"
            if let name = a.string("name") { line += " \"\(name)\"" }
            if let left = a.int("remainingUSec") { line += ", \(Durations.format(usec: left)) left" }
            if a.bool("expiring") == true { line += ", " + Style.red.paint("expiring", enabled: color) }
            assertionText += "\n" + line
        }
        fields.append(("Assertions", assertionText))

        let activities = app.array("activities").compactMap(\.objectValue)
        fields.append((
            "Activities",
            activities.isEmpty
                ? "none"
                : activities.map { "\($0.string("mode") ?? "?") (#\($0.int("activityId").map(String.init) ?? "?"))" }.joined(separator: ", ")
        ))
        let refreshWhy = app.string("refreshStatusReason").map { ", \($0)" } ?? ""
        fields.append(("Refresh", "\(app.string("refreshSetting") ?? "-") (status: \(app.string("refreshStatus") ?? "-")\(refreshWhy))"))

        let remainingText: String
        if let left = app.int("backgroundTimeRemainingUSec") {
            remainingText = Durations.format(usec: left)
        } else {
            remainingText = state == "active" || state == "inactive" ? "unlimited (foreground)" : "-"
        }
        fields.append(("Background time", remainingText))
        if let pending = app.int("pendingTaskRequests") { fields.append(("Task requests", "\(pending) pending")) }
        if let freezer = freezerText(settings) { fields.append(("Freezer", freezer)) }
        if let last = app.object("lastDecision") {
            let r = DecisionRecord(last)
            var text = "\(r.decision) (\(r.reason))"
            if let t = r.realtimeUSec { text = clock(t) + " " + text }
            if !r.message.isEmpty { text += ": " + r.message }
            fields.append(("Last decision", text))
        } else {
            fields.append(("Last decision", "-"))
        }

        var lines = [title] + Fields.render(fields).map { "  " + $0 }
        lines.append("")
        switch journal {
        case .entries(let records) where records.isEmpty:
            lines.append("No recent decisions in the journal.")
        case .entries(let records):
            lines.append("Recent decisions (journal):")
            lines += decisions(records, clock: clock, width: width, color: color)
        case .unavailable(let why):
            lines.append("Journal unavailable: \(why)")
        }
        return lines
    }

    // MARK: stats, settings

    package static let statsLabels: [(key: String, label: String)] = [
        ("uptimeUSec", "Uptime"), ("apps", "Apps"), ("connections", "Connections"), ("calls", "Calls"),
        ("decisions", "Decisions"), ("liveAssertions", "Live assertions"), ("journalEntries", "Journal entries"),
        ("journalDropped", "Journal dropped"), ("journalCoalesced", "Journal coalesced"),
        ("journalSummaries", "Journal summaries"), ("connectionsRefused", "Connections refused"),
        ("connectionsTimedOut", "Connections timed out"), ("connectionsOversized", "Connections oversized"),
        ("connectionsPaused", "Connections paused"),
        ("freezerBackend", "Freezer"), ("freezerBackendReason", "Freezer because"), ("dryRun", "Dry run"),
    ]

    package static let settingsLabels: [(key: String, label: String)] = [
        ("onExternalPower", "External power"), ("network", "Network"), ("backgroundAppRefresh", "Background refresh"),
        ("lowPowerMode", "Low power mode"), ("freezerBackend", "Freezer"), ("freezerBackendReason", "Freezer because"),
        ("dryRun", "Dry run"), ("socket", "Socket"),
        ("didEnterBackgroundTimeoutUSec", "Grace window"), ("backgroundTimeBudgetUSec", "Background budget"),
        ("expirationWarningUSec", "Expiration warning"), ("maxBackgroundTasksPerApp", "Max tasks per app"),
        ("launchTimeoutUSec", "Launch timeout"), ("killTimeoutUSec", "Kill timeout"),
    ]

    /// Known keys first, in their order and with their labels; any others after, sorted, under their own name.
    package static func keyValues(_ object: [String: JSON], labels: [(key: String, label: String)]) -> [String] {
        var pairs: [(label: String, value: String)] = []
        for (key, label) in labels { if let v = object[key] { pairs.append((label, valueText(key, v))) } }
        let known = Set(labels.map(\.key))
        for key in object.keys.sorted() where !known.contains(key) {
            if let v = object[key] { pairs.append((key, valueText(key, v))) }
        }
        return Fields.render(pairs)
    }

    /// `…USec` integers as durations, booleans as yes/no, strings bare.
    package static func valueText(_ key: String, _ v: JSON) -> String {
        switch v {
        case .int(let i) where key.hasSuffix("USec"): return Durations.format(usec: i)
        case .bool(let b): return b ? "yes" : "no"
        case .null: return "-"
        default: return ErrorText.scalarText(v)
        }
    }

    package static func remaining(_ usec: Int64?) -> String {
        usec.map { Durations.format(usec: $0) } ?? "-"
    }
}

extension String {
    package func padding(to n: Int) -> String {
        count >= n ? self : self + String(repeating: " ", count: n - count)
    }
}
