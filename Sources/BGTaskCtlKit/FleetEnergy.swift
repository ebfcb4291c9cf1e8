package import BGTaskProtocol

/// SPEC §16, beyond one device: sums bgtaskd's journal entries (`journalctl --directory DIR -o json`, one
/// object per line, as a `systemd-journal-remote` collector stores a fleet's journals) per machine
/// (`_MACHINE_ID`, `_HOSTNAME`) and app: the background CPU the `suspend` entries carry
/// (`BGTASKD_BACKGROUND_CPU_USEC=`), suspensions, and wakes (`resume`/`launch` into the background) by cause.
package struct FleetEnergy {
    private struct Key: Hashable {
        var machine: String
        var app: String
    }
    private var rows: [Key: EnergyRow] = [:]
    /// Lines that were not a journal entry.
    package private(set) var unreadable = 0

    package init() {}

    /// Adds one `journalctl -o json` line.
    package mutating func add(line: some Collection<UInt8>) {
        guard let entry = try? JSON.parse(line), let e = entry.objectValue else {
            unreadable += 1
            return
        }
        add(e)
    }

    /// Adds one journal entry (its fields).
    package mutating func add(_ e: [String: JSON]) {
        func field(_ name: String) -> String? { e[name]?.stringValue }
        guard field("SYSLOG_IDENTIFIER") == "bgtaskd", let app = field("BGTASKD_APP"),
            let decision = field("BGTASKD_DECISION")
        else { return }
        let machine = field("_MACHINE_ID") ?? "-"
        let key = Key(machine: machine, app: app)
        var row = rows[key] ?? EnergyRow(machine: machine, appId: app, backgroundCPUUSec: 0, wakes: [:], suspends: 0)
        if let host = field("_HOSTNAME") { row.hostname = host }
        let state = field("BGTASKD_STATE")
        let previous = field("BGTASKD_PREVIOUS_STATE")
        switch decision {
        case "suspend":
            row.suspends = (row.suspends ?? 0) + 1
            if let cpu = field("BGTASKD_BACKGROUND_CPU_USEC").flatMap({ Int64($0) }), cpu >= 0 { row.backgroundCPUUSec += cpu }
        case "resume" where previous == "suspended" && state == "background",
            "launch" where previous == "not-running" && state == "background":
            row.wakes[Self.wakeCause(reason: field("BGTASKD_REASON")), default: 0] += 1
        default:
            break
        }
        rows[key] = row
    }

    /// The cause of a wake from its reason (as the daemon counts them, `AppInfo.energy.wakes`).
    static func wakeCause(reason: String?) -> String {
        switch reason {
        case "remote-notification": return "remote-notification"
        case "bus-call": return "bus-call"
        case "lock-contended": return "lock"
        case "task-scheduled": return "task"
        default: return "user"
        }
    }

    /// Every machine's apps, most costly first.
    package var sortedRows: [EnergyRow] { rows.values.sorted(by: EnergyRow.costlierFirst) }
}
