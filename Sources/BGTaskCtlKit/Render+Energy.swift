import BGTaskModel
package import BGTaskProtocol

// SPEC §16: `bgtaskctl energy`, what each app's background work cost, most costly first; on one device
// from the daemon (`AppInfo.energy`), or for a fleet from collected journal files (FleetEnergy).

/// One line of `bgtaskctl energy`.
package struct EnergyRow: Equatable {
    /// `_MACHINE_ID` and `_HOSTNAME` (`--directory` only).
    package var machine: String?
    package var hostname: String?
    package var appId: String
    package var backgroundCPUUSec: Int64
    /// Over the last 24 hours (the daemon's own view only).
    package var backgroundCPU24hUSec: Int64?
    package var wakes: [String: Int64]
    package var wakes24h: [String: Int64]?
    /// Suspensions seen (`--directory` only: the entries the CPU time was summed from).
    package var suspends: Int64?

    package init(
        machine: String? = nil, hostname: String? = nil, appId: String, backgroundCPUUSec: Int64,
        backgroundCPU24hUSec: Int64? = nil, wakes: [String: Int64], wakes24h: [String: Int64]? = nil, suspends: Int64? = nil
    ) {
        self.machine = machine
        self.hostname = hostname
        self.appId = appId
        self.backgroundCPUUSec = backgroundCPUUSec
        self.backgroundCPU24hUSec = backgroundCPU24hUSec
        self.wakes = wakes
        self.wakes24h = wakes24h
        self.suspends = suspends
    }

    package var totalWakes: Int64 { wakes.values.reduce(0, +) }

    /// The row as `--json` prints it.
    package var json: JSON {
        var o: [String: JSON] = [
            "appId": .string(appId), "backgroundCPUUSec": .int(backgroundCPUUSec),
            "wakes": .object(wakes.mapValues { .int($0) }),
        ]
        if let machine { o["machineId"] = .string(machine) }
        if let hostname { o["hostname"] = .string(hostname) }
        if let backgroundCPU24hUSec { o["backgroundCPU24hUSec"] = .int(backgroundCPU24hUSec) }
        if let wakes24h { o["wakes24h"] = .object(wakes24h.mapValues { .int($0) }) }
        if let suspends { o["suspends"] = .int(suspends) }
        return .object(o)
    }

    /// Most background CPU first; then most wakes; then by machine and app ID (a stable order).
    package static func costlierFirst(_ a: EnergyRow, _ b: EnergyRow) -> Bool {
        if a.backgroundCPUUSec != b.backgroundCPUUSec { return a.backgroundCPUUSec > b.backgroundCPUUSec }
        if a.totalWakes != b.totalWakes { return a.totalWakes > b.totalWakes }
        if (a.hostname ?? "", a.machine ?? "") != (b.hostname ?? "", b.machine ?? "") {
            return (a.hostname ?? "", a.machine ?? "") < (b.hostname ?? "", b.machine ?? "")
        }
        return a.appId < b.appId
    }
}

extension Render {
    /// The daemon's apps as energy rows, most costly first.
    package static func energyRows(_ apps: [ManagerWire.AppInfo]) -> [EnergyRow] {
        apps.map { a in
            EnergyRow(
                appId: a.appId, backgroundCPUUSec: a.energy?.backgroundCPUUSec ?? 0,
                backgroundCPU24hUSec: a.energy?.backgroundCPU24hUSec ?? 0, wakes: a.energy?.wakes ?? [:],
                wakes24h: a.energy?.wakes24h ?? [:])
        }.sorted(by: EnergyRow.costlierFirst)
    }

    /// Wakes as `3 (task 2, bus-call 1)`.
    static func wakesText(_ wakes: [String: Int64]) -> String {
        let total = wakes.values.reduce(0, +)
        let parts = wakes.filter { $0.value > 0 }.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
        if parts.isEmpty { return "0" }
        return "\(total) (" + parts.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")"
    }

    /// The table of `bgtaskctl energy` (with `--directory`: a MACHINE column, no 24 h columns).
    package static func energy(_ rows: [EnergyRow], fleet: Bool, width: Int?, color: Bool, legend: Bool) -> [String] {
        if rows.isEmpty { return legend ? [fleet ? "No bgtaskd entries in these journal files." : "No apps."] : [] }
        var columns: [Table.Column] = []
        if fleet { columns.append(Table.Column(header: "MACHINE")) }
        columns += [Table.Column(header: "APP"), Table.Column(header: "BACKGROUND CPU", alignRight: true)]
        if fleet {
            columns.append(Table.Column(header: "SUSPENDS", alignRight: true))
        } else {
            columns.append(Table.Column(header: "CPU 24H", alignRight: true))
        }
        columns.append(Table.Column(header: "WAKES", shrinkable: true))
        if !fleet { columns.append(Table.Column(header: "WAKES 24H", shrinkable: true)) }
        let table = Table(columns: columns, rows: rows.map { r in
            var cells: [Table.Cell] = []
            if fleet { cells.append(.init(r.hostname ?? r.machine.map { String($0.prefix(12)) } ?? "-")) }
            cells += [.init(r.appId), .init(Durations.format(usec: r.backgroundCPUUSec))]
            if fleet {
                cells.append(.init(String(r.suspends ?? 0)))
            } else {
                cells.append(.init(Durations.format(usec: r.backgroundCPU24hUSec ?? 0)))
            }
            cells.append(.init(wakesText(r.wakes)))
            if !fleet { cells.append(.init(wakesText(r.wakes24h ?? [:]))) }
            return cells
        })
        var lines = table.render(width: width, color: color, header: legend)
        if legend {
            let machines = Set(rows.map { $0.machine ?? $0.hostname ?? "" }).count
            lines += ["", "\(rows.count) app\(rows.count == 1 ? "" : "s") listed"
                + (fleet ? " on \(machines) machine\(machines == 1 ? "" : "s")." : "; background CPU: time used while not in the foreground.")]
        }
        return lines
    }
}
