import BGTaskModel
import Testing

@testable import BGTaskProtocol

/// SPEC §15 on the wire: the scene fields of `Event` (written by hand in key order), `CheckIn`'s `scenes`,
/// `SetSceneState`'s checks and `AppInfo.scenes`.
@Suite struct SceneWireTests {
    @Test func sceneEventsWriteTheirFieldsInKeyOrder() throws {
        var e = AppWire.Event(id: 9, kind: .sceneSnapshot, state: .background, needsAck: true, deadlineUSec: 5)
        e.sceneId = "toplevel-3"
        e.title = "Inbox \"1\""
        e.output = "DSI-1"
        e.path = "/run/bgtaskd/snapshots/org.example.Mail/toplevel-3.png"
        var fast: [UInt8] = []
        e.write(into: &fast)
        var full: [UInt8] = []
        JSON.object(e.json).write(into: &full)
        #expect(fast == full)
        #expect(try AppWire.Event(json: e.json) == e)
        // Without a scene: the bytes of before (no new key).
        let plain = AppWire.Event(id: 1, kind: .didBecomeActive, state: .active, needsAck: false)
        var bytes: [UInt8] = []
        plain.write(into: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"id":1,"kind":"did-become-active","needsAck":false,"state":"active"}"#)
    }

    @Test func checkInScenesIsOptional() throws {
        #expect(try AppWire.CheckIn(json: ["appId": "a"]).scenes == nil)
        #expect(try AppWire.CheckIn(json: ["appId": "a", "scenes": true]).scenes == true)
        #expect(AppWire.CheckIn(appId: "a").json == ["appId": "a"])
    }

    @Test func setSceneStateRefusesWhatItCannotTake() {
        let ok: [String: JSON] = ["appId": "a", "sceneId": "s", "state": "foreground-active"]
        #expect((try? ManagerWire.SetSceneState(json: ok)) != nil)
        var bad = ok
        bad["state"] = "visible"
        #expect(throws: WireFieldError("state")) { try ManagerWire.SetSceneState(json: bad) }
        bad = ok
        bad["reason"] = "no-assertions"
        #expect(throws: WireFieldError("reason")) { try ManagerWire.SetSceneState(json: bad) }
        bad = ok
        bad["title"] = .string(String(repeating: "x", count: 1025))
        #expect(throws: WireFieldError("title")) { try ManagerWire.SetSceneState(json: bad) }
    }

    @Test func appInfoScenesAreLeftOutWhenThereAreNone() throws {
        let scene = ManagerWire.Scene(
            sceneId: "s", title: "", output: nil, state: .background, snapshotPath: "/p.png", snapshotRealtimeUSec: 3)
        #expect(try ManagerWire.Scene(json: scene.json) == scene)
        #expect(scene.json["output"] == .null)
    }
}
