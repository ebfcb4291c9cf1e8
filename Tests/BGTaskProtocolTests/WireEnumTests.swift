import BGTaskModel
import BGTaskProtocol
import Testing

// A newer daemon may answer with a state, decision, reason, refresh status or mode this build does not
// know: the replies and types the daemon sends keep it as its raw string (`WireEnum`), so a client still
// reads the reply; the parameters of calls stay strict.

@Suite struct WireEnumTests {
    static let decision: [String: JSON] = [
        "realtimeUSec": .int(17), "appId": .string("org.example.Mail"), "decision": .string("defer"),
        "reason": .string("thermal-pressure"), "message": .string("deferred: too hot"),
    ]

    static let app: [String: JSON] = [
        "appId": .string("org.example.Mail"), "name": .string("Mail"), "state": .string("hibernating"), "pid": .int(4242),
        "uid": .int(0), "lifecycleAware": .bool(true), "assertions": .array([]),
        "activities": .array([.object(["activityId": .int(2), "appId": .string("org.example.Mail"), "mode": .string("bluetooth-le")])]),
        "refreshSetting": .string("on"), "refreshStatus": .string("paused"), "backgroundTimeRemainingUSec": .null,
        "pendingTaskRequests": .int(0), "lastDecision": .object(decision), "refreshStatusReason": .string("thermal-pressure"),
        "lastForegroundUSec": .null,
    ]

    @Test func aReplyWithValuesThisBuildDoesNotKnowIsRead() throws {
        let list = try ManagerWire.ListAppsReply(json: ["apps": .array([.object(Self.app)])])
        let app = try #require(list.apps.first)
        #expect(app.state.rawValue == "hibernating")
        #expect(app.refreshStatus.rawValue == "paused")
        #expect(app.refreshStatusReason?.rawValue == "thermal-pressure")
        #expect(app.activities.first?.mode.rawValue == "bluetooth-le")
        #expect(app.lastDecision?.decision.rawValue == "defer")
        #expect(app.lastDecision?.reason.rawValue == "thermal-pressure")
        // Written back as it came.
        #expect(app.json["state"] == .string("hibernating"))

        let explain = try ManagerWire.ExplainReply(json: ["state": .string("hibernating"), "reasons": .array([.object(Self.decision)])])
        #expect(explain.state.rawValue == "hibernating" && explain.reasons.first?.reason.rawValue == "thermal-pressure")
        let monitor = try ManagerWire.MonitorReply(json: ["decision": .object(Self.decision)])
        #expect(monitor.decision.decision.rawValue == "defer")
    }

    @Test func knownValuesAreTheirCases() throws {
        var object = Self.app
        object["state"] = .string("suspended")
        let app = try ManagerWire.AppInfo(json: object)
        #expect(app.state.known == .suspended)
        #expect(app.state == WireEnum(AppState.suspended))
        #expect(app.refreshStatus.known == nil)
    }

    @Test func aValueOfTheWrongTypeIsStillRefused() {
        var object = Self.app
        object["state"] = .int(3)
        #expect(throws: WireFieldError("state")) { try ManagerWire.AppInfo(json: object) }
    }

    @Test func callsStillRefuseAnUnknownValue() {
        #expect(throws: WireFieldError("mode")) { try ManagerWire.SetGlobalRefresh(json: ["mode": .string("sometimes")]) }
        #expect(throws: WireFieldError("network")) { try ManagerWire.SetConditions(json: ["network": .string("satellite")]) }
    }
}
