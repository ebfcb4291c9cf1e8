import BGTaskModel
package import BGTaskProtocol

// `status` and `stats`: an app's fields and the daemon's counters, as label/value blocks.

extension Render {
    // MARK: status

    /// What `status` learned from the journal.
    package enum JournalResult: Equatable {
        case entries([DecisionRecord])
        case unavailable(String)
    }

    /// `settings`: the daemon's GetSettings, for the freezer line (empty: no such line).
    package static func status(
        _ reply: ManagerWire.GetAppReply, journal: JournalResult, userName: (Int64) -> String?, clock: Clock, width: Int?, color: Bool,
        settings: ManagerWire.Settings? = nil
    ) -> [String] {
        let app = reply.app
        let appId = app.appId
        let state = app.state.rawValue
        let style = Style.forState(state)
        var title = (style?.paint("●", enabled: color) ?? "●") + " " + appId
        if !app.name.isEmpty, app.name != appId { title += " - " + app.name }

        var fields: [(label: String, value: String)] = []
        fields.append(("State", style?.paint(state, enabled: color) ?? state))
        fields.append(("PID", app.pid.map(String.init) ?? "-"))
        if let uid = app.uid {
            fields.append(("UID", userName(uid).map { "\(uid) (\($0))" } ?? String(uid)))
        } else {
            fields.append(("UID", "-"))
        }
        fields.append(("Lifecycle", app.lifecycleAware ? "aware (checks in, receives events)" : "unaware (LifecycleAware=no)"))

        let assertions = app.assertions
        var assertionText = assertions.isEmpty ? "none" : "\(assertions.count)"
        for a in assertions {
            var line = "#\(a.taskId)"
            if let name = a.name { line += " \"\(name)\"" }
            if let left = a.remainingUSec { line += ", \(Durations.format(usec: left)) left" }
            if a.expiring { line += ", " + Style.red.paint("expiring", enabled: color) }
            assertionText += "\n" + line
        }
        fields.append(("Assertions", assertionText))

        let activities = app.activities
        fields.append((
            "Activities",
            activities.isEmpty
                ? "none"
                : activities.map { "\($0.mode.rawValue) (#\($0.activityId))" }.joined(separator: ", ")
        ))
        if !app.scenes.isEmpty { fields.append(("Scenes", sceneText(app.scenes))) }
        let refreshWhy = app.refreshStatusReason.map { ", \($0.rawValue)" } ?? ""
        fields.append(("Refresh", "\(app.refreshSetting ? "on" : "off") (status: \(app.refreshStatus.rawValue)\(refreshWhy))"))

        let remainingText: String
        if let left = app.backgroundTimeRemainingUSec {
            remainingText = Durations.format(usec: left)
        } else {
            remainingText = app.state.known?.isForeground == true ? "unlimited (foreground)" : "-"
        }
        fields.append(("Background time", remainingText))
        fields.append(("Task requests", "\(app.pendingTaskRequests) pending"))
        // SPEC §16 (absent from a daemon without them).
        if let bucket = app.bucket { fields.append(("Standby bucket", bucket)) }
        if let e = app.energy {
            fields.append((
                "Background CPU",
                "\(Durations.format(usec: e.backgroundCPUUSec)) (24 h: \(Durations.format(usec: e.backgroundCPU24hUSec)))"))
            fields.append(("Background wakes", "\(wakesText(e.wakes)) (24 h: \(wakesText(e.wakes24h)))"))
        }
        if let settings { fields.append(("Freezer", freezerText(settings))) }
        if let last = app.lastDecision {
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

    /// SPEC §15: the app's scenes, one a line: id, title, state, display, snapshot.
    package static func sceneText(_ scenes: [ManagerWire.Scene]) -> String {
        var text = "\(scenes.count)"
        for s in scenes {
            var line = s.sceneId
            if !s.title.isEmpty { line += " \"\(s.title)\"" }
            line += " " + s.state.rawValue
            if let output = s.output { line += " on \(output)" }
            if let path = s.snapshotPath { line += ", snapshot \(path)" }
            text += "\n" + line
        }
        return text
    }

    // MARK: stats, settings

    package static let statsLabels: [(key: String, label: String)] = [
        ("uptimeUSec", "Uptime"), ("apps", "Apps"), ("connections", "Connections"), ("calls", "Calls"),
        ("decisions", "Decisions"), ("liveAssertions", "Live assertions"), ("journalEntries", "Journal entries"),
        ("journalDropped", "Journal dropped"), ("journalCoalesced", "Journal coalesced"),
        ("journalSummaries", "Journal summaries"), ("journalWaits", "Journal waits"), ("connectionsRefused", "Connections refused"),
        ("connectionsTimedOut", "Connections timed out"), ("connectionsOversized", "Connections oversized"),
        ("connectionsPaused", "Connections paused"),
        ("freezerBackend", "Freezer"), ("freezerBackendReason", "Freezer because"), ("dryRun", "Dry run"),
        ("systemSleep", "System sleep"), ("systemSleepReason", "System sleep because"),
        ("idleInhibited", "Idle inhibited"), ("sleepsSeen", "Sleeps seen"),
    ]

    /// `stats`: the counters (`sent`: the reply as sent, whose fields this build does not know are shown too).
    package static func stats(_ reply: ManagerWire.StatsReply, sent: [String: JSON]) -> [String] {
        let object = withUnknownFields(reply.stats, sent: sent[ManagerWire.StatsReply.fields[0]]?.objectValue)
        var lines = keyValues(object, labels: statsLabels)
        if let dryRun = dryRunNotice(reply.stats) { lines.append(dryRun) }
        return lines
    }

    /// `conditions` without options: only the conditions and what they govern.
    package static func conditions(_ s: ManagerWire.Settings) -> [String] {
        Fields.render([
            ("External power", s.onExternalPower ? "yes" : "no"), ("Network", s.network.rawValue),
            ("Background refresh", s.backgroundAppRefresh.rawValue), ("Low power mode", s.lowPowerMode ? "yes" : "no"),
        ])
    }

    /// The typed message's fields, and the fields of `sent` its type does not declare.
    static func withUnknownFields<M: WireMessage>(_ message: M, sent: [String: JSON]?) -> [String: JSON] {
        var object = message.json
        for (key, value) in sent ?? [:] where !M.fields.contains(key) { object[key] = value }
        return object
    }

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
