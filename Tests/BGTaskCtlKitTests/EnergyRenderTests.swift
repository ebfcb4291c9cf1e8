import BGTaskCtlKit
import BGTaskProtocol
import Testing

/// SPEC §16: `bgtaskctl energy`, from the daemon's apps and from a fleet's journal entries.
@Suite struct EnergyRenderTests {
    static func app(_ id: String, cpu: Int64?, wakes: [String: Int64] = [:]) throws -> ManagerWire.AppInfo {
        var o: [String: JSON] = [
            "appId": .string(id), "name": .string(id), "state": .string("suspended"), "lifecycleAware": .bool(true),
            "assertions": .array([]), "activities": .array([]), "refreshSetting": .string("on"),
            "refreshStatus": .string("available"), "pendingTaskRequests": .int(0),
        ]
        if let cpu {
            o["energy"] = .object(ManagerWire.AppEnergy(
                backgroundCPUUSec: cpu, backgroundCPU24hUSec: cpu / 2, wakes: wakes, wakes24h: wakes).json)
        }
        return try ManagerWire.AppInfo(json: o)
    }

    @Test func theCostliestAppComesFirstAndADaemonWithoutAccountingReadsAsZero() throws {
        let apps = [
            try Self.app("org.example.A", cpu: 10), try Self.app("org.example.B", cpu: 2_500_000, wakes: ["task": 2, "bus-call": 1]),
            try Self.app("org.example.C", cpu: nil), try Self.app("org.example.D", cpu: 10, wakes: ["user": 1]),
        ]
        let rows = Render.energyRows(apps)
        #expect(rows.map(\.appId) == ["org.example.B", "org.example.D", "org.example.A", "org.example.C"])
        let lines = Render.energy(rows, fleet: false, width: nil, color: false, legend: true)
        #expect(lines[0].hasPrefix("APP"))
        #expect(lines[1].hasPrefix("org.example.B") && lines[1].contains("2.5s") && lines[1].contains("3 (task 2, bus-call 1)"),
                "\(lines)")
    }

    @Test func aFleetIsSummedPerMachineAndApp() {
        var fleet = FleetEnergy()
        func entry(_ machine: String, _ host: String, _ app: String, _ decision: String, cpu: Int? = nil,
                   reason: String = "no-assertions", previous: String = "background", state: String = "suspended") -> String {
            var o = "{\"SYSLOG_IDENTIFIER\":\"bgtaskd\",\"_MACHINE_ID\":\"\(machine)\",\"_HOSTNAME\":\"\(host)\","
                + "\"BGTASKD_APP\":\"\(app)\",\"BGTASKD_DECISION\":\"\(decision)\",\"BGTASKD_REASON\":\"\(reason)\","
                + "\"BGTASKD_PREVIOUS_STATE\":\"\(previous)\",\"BGTASKD_STATE\":\"\(state)\""
            if let cpu { o += ",\"BGTASKD_BACKGROUND_CPU_USEC\":\"\(cpu)\"" }
            return o + "}"
        }
        let lines = [
            entry("m1", "car-1", "org.example.Mail", "suspend", cpu: 300),
            entry("m1", "car-1", "org.example.Mail", "suspend", cpu: 200),
            entry("m2", "car-2", "org.example.Mail", "suspend", cpu: 1_000),
            entry("m2", "car-2", "org.example.Mail", "resume", reason: "task-scheduled", previous: "suspended", state: "background"),
            entry("m1", "car-1", "org.example.Maps", "launch", reason: "remote-notification", previous: "not-running", state: "background"),
            "not json",
        ]
        for l in lines { fleet.add(line: Array(l.utf8)) }
        let rows = fleet.sortedRows
        #expect(rows.map { "\($0.hostname ?? "")/\($0.appId)" } == ["car-2/org.example.Mail", "car-1/org.example.Mail", "car-1/org.example.Maps"])
        #expect(rows.map(\.backgroundCPUUSec) == [1_000, 500, 0])
        #expect(rows.map(\.suspends) == [1, 2, 0])
        #expect(rows[0].wakes == ["task": 1] && rows[2].wakes == ["remote-notification": 1])
        #expect(fleet.unreadable == 1)
        let table = Render.energy(rows, fleet: true, width: nil, color: false, legend: true)
        #expect(table[0].hasPrefix("MACHINE") && table[1].hasPrefix("car-2"))
        #expect(table.last == "3 apps listed on 2 machines.")
    }
}
