import BGTaskCtlKit
import BGTaskProtocol
import Testing

// The renderers take the contract's typed replies. A reply from a newer daemon, with a state, decision,
// reason, refresh status and mode this build does not know, still renders: the values as sent, uncoloured.

@Suite struct UnknownValuesRenderTests {
    static let decision: [String: JSON] = [
        "realtimeUSec": .int(1_700_000_000_000_000), "appId": .string("org.example.Mail"), "decision": .string("defer"),
        "reason": .string("thermal-pressure"), "message": .string("org.example.Mail deferred: too hot"),
    ]

    static let app: [String: JSON] = [
        "appId": .string("org.example.Mail"), "name": .string("Mail"), "state": .string("hibernating"), "pid": .int(4242),
        "uid": .int(0), "lifecycleAware": .bool(true), "assertions": .array([]),
        "activities": .array([.object(["activityId": .int(2), "appId": .string("org.example.Mail"), "mode": .string("bluetooth-le")])]),
        "refreshSetting": .string("on"), "refreshStatus": .string("paused"), "backgroundTimeRemainingUSec": .null,
        "pendingTaskRequests": .int(1), "lastDecision": .object(decision), "refreshStatusReason": .string("thermal-pressure"),
        "lastForegroundUSec": .int(5_000_000), "thermalLevel": .int(3),
    ]

    static func clock(_: Int64) -> String { "Nov 14 22:13:20" }

    @Test func list() throws {
        let reply = try ManagerWire.ListAppsReply(json: ["apps": .array([.object(Self.app)])])
        let lines = Render.list(reply, width: nil, color: true, legend: true)
        #expect(lines[1].split(separator: " ").prefix(4) == ["org.example.Mail", "Mail", "hibernating", "4242"], "\(lines)")
        #expect(lines[1].contains("paused"))
        #expect(!lines[1].contains("\u{1B}["), "a state this build does not know has no colour")
        // Not `not-running`: a running app.
        #expect(Render.runningOrder(reply.apps) == [0])
        let running = Render.runningList(reply.apps, nowUSec: 65_000_000, width: nil, color: false, legend: false)
        #expect(running == ["org.example.Mail  hibernating  4242  1min ago  Mail"])
    }

    @Test func status() throws {
        let reply = try ManagerWire.GetAppReply(json: ["app": .object(Self.app)])
        let lines = Render.status(reply, journal: .entries([]), userName: { _ in "root" }, clock: Self.clock, width: nil, color: false)
        let text = lines.joined(separator: "\n")
        for needle in [
            "State: hibernating", "Activities: bluetooth-le (#2)", "Refresh: on (status: paused, thermal-pressure)",
            "Background time: -", "Last decision: Nov 14 22:13:20 defer (thermal-pressure): org.example.Mail deferred: too hot",
        ] {
            #expect(text.contains(needle), "\(needle)\n\(text)")
        }
    }

    @Test func explainAndMonitor() throws {
        let explain = try ManagerWire.ExplainReply(json: ["state": .string("hibernating"), "reasons": .array([.object(Self.decision)])])
        let lines = Render.explain("org.example.Mail", explain, clock: Self.clock, width: nil, color: true)
        #expect(lines[0] == "org.example.Mail is hibernating because of (oldest first):")
        #expect(lines[1] == "  Nov 14 22:13:20  defer  thermal-pressure  org.example.Mail deferred: too hot")
        let monitor = try ManagerWire.MonitorReply(json: ["decision": .object(Self.decision)])
        #expect(
            Render.monitorLine(monitor, clock: Self.clock, color: true)
                == "Nov 14 22:13:20  org.example.Mail  defer          thermal-pressure  org.example.Mail deferred: too hot")
    }

    @Test func refreshTable() throws {
        let reply = try ManagerWire.ListAppsReply(json: ["apps": .array([.object(Self.app)])])
        let settings = try ManagerWire.Settings(json: [
            "backgroundAppRefresh": .string("on"), "lowPowerMode": .bool(false), "onExternalPower": .bool(true),
            "network": .string("satellite"), "freezerBackend": .string("cgroup"), "socket": .string("/run/bgtaskd/io.bgtaskd"),
            "didEnterBackgroundTimeoutUSec": .int(5_000_000), "backgroundTimeBudgetUSec": .int(30_000_000),
            "expirationWarningUSec": .int(5_000_000), "maxBackgroundTasksPerApp": .int(8), "launchTimeoutUSec": .int(20_000_000),
            "killTimeoutUSec": .int(5_000_000),
        ])
        let lines = Render.refreshTable(reply, settings: settings, width: nil, color: false, legend: true)
        #expect(lines[0] == "Background App Refresh: on; low power mode: off; network: satellite")
        #expect(lines[3] == "org.example.Mail  on       paused  thermal-pressure")
        #expect(Render.conditions(settings) == [
            "    External power: yes", "           Network: satellite", "Background refresh: on", "    Low power mode: no",
        ])
    }

    @Test func statsShowFieldsThisBuildDoesNotKnow() throws {
        let stats: [String: JSON] = [
            "uptimeUSec": .int(61_000_000), "apps": .int(2), "connections": .int(1), "calls": .int(9), "decisions": .int(4),
            "liveAssertions": .int(0), "journalEntries": .int(4), "journalDropped": .int(0), "systemSleeps": .int(3),
        ]
        let sent: [String: JSON] = ["stats": .object(stats)]
        let lines = Render.stats(try ManagerWire.StatsReply(json: sent), sent: sent)
        #expect(lines.first == "         Uptime: 1min 1s")
        #expect(lines.last == "   systemSleeps: 3")
    }

    /// Every label names a field of the contract's struct.
    @Test func statsLabelsAreFieldsOfTheContract() {
        #expect(Render.statsLabels.map(\.key).filter { !ManagerWire.DaemonStats.fields.contains($0) } == [])
    }
}
