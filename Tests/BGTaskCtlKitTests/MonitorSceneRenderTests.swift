import BGTaskCtlKit
import BGTaskProtocol
import Testing

// `bgtaskctl monitor` names the scene whose change caused a decision (SPEC §15), after the message; a
// decision no scene caused prints as before.
@Suite struct MonitorSceneRenderTests {
    static func clock(_: Int64) -> String { "Nov 14 22:13:20" }

    static func reply(scene: String?) throws -> ManagerWire.MonitorReply {
        var decision: [String: JSON] = [
            "realtimeUSec": .int(1_700_000_000_000_000), "appId": .string("org.example.Mail"),
            "decision": .string("background"), "reason": .string("user-request"),
            "message": .string("org.example.Mail entered the background"),
        ]
        if let scene { decision["scene"] = .string(scene) }
        return try ManagerWire.MonitorReply(json: ["decision": .object(decision)])
    }

    @Test func aSceneCausedDecisionNamesItsScene() throws {
        let line = Render.monitorLine(try Self.reply(scene: "draft"), clock: Self.clock, color: false)
        #expect(line == "Nov 14 22:13:20  org.example.Mail  background     user-request  org.example.Mail entered the background  [scene draft]")
    }

    @Test func aDecisionWithoutSceneIsUnchanged() throws {
        let line = Render.monitorLine(try Self.reply(scene: nil), clock: Self.clock, color: false)
        #expect(line == "Nov 14 22:13:20  org.example.Mail  background     user-request  org.example.Mail entered the background")
    }
}
