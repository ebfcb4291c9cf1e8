import BGTaskProtocol
import Testing

@testable import BGTaskClientCore

#if canImport(Glibc)
import Glibc
#endif

/// Records the scene callbacks (SPEC §15) beside the application's.
@MainActor
final class RecordingSceneDelegate: BGApplicationDelegate, BGSceneDelegate {
    var log: [String] = [] {
        didSet { TestChanges.announce() }
    }
    func applicationWillResignActive(_ application: BGApplication) { log.append("app resign") }
    func applicationDidEnterBackground(_ application: BGApplication) { log.append("app background") }
    func scene(_ scene: BGScene, willConnectTo application: BGApplication) {
        log.append("connect \(scene.id) \(scene.title) \(scene.output ?? "-")")
        application.setSnapshotHook(forScene: scene.id) { scene, path in
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            defer { close(fd) }
            self.log.append("snapshot \(scene.id)")
            return fd >= 0 && write(fd, "png", 3) == 3
        }
    }
    func sceneDidBecomeActive(_ scene: BGScene) { log.append("active \(scene.id)") }
    func sceneWillResignActive(_ scene: BGScene) { log.append("resign \(scene.id)") }
    func sceneDidEnterBackground(_ scene: BGScene) { log.append("background \(scene.id)") }
    func sceneDidDisconnect(_ scene: BGScene) { log.append("disconnect \(scene.id)") }
    func application(_ application: BGApplication, didReceive event: BGApplicationEvent) { TestChanges.announce() }
}

@MainActor
@Suite(.serialized) struct SceneDelegateTests {
    @Test func aSceneDelegateChecksInWithScenesAndGetsItsEventsAndSnapshotHooks() async throws {
        let dir = try FakeVarlinkServer.temporaryDirectory()
        let daemon = try FakeDaemon(path: dir + "/s")
        let app = BGApplication(
            appID: "org.example.Notes", socketPath: daemon.server.path, backoff: Backoff(initial: 0.01, maximum: 0.05),
            registersAsShared: false)
        let delegate = RecordingSceneDelegate()
        app.delegate = delegate
        app.sceneDelegate = delegate
        app.exitsOnTerminate = false
        defer {
            app.stop()
            daemon.server.stop()
        }
        app.start()
        #expect(await eventually { daemon.streams.count == 1 })
        #expect(daemon.calls("CheckIn").first?.parameters == ["appId": "org.example.Notes", "scenes": true])
        let path = dir + "/left.png"
        daemon.push(["id": 1, "kind": "scene-will-connect", "state": "active", "needsAck": false, "sceneId": "left",
                     "title": "Shopping", "output": "DSI-1"], state: "active")
        daemon.push(["id": 2, "kind": "scene-did-become-active", "state": "active", "needsAck": false, "sceneId": "left"], state: "active")
        daemon.push(["id": 3, "kind": "scene-will-resign-active", "state": "active", "needsAck": false, "sceneId": "left"], state: "active")
        daemon.push(["id": 4, "kind": "scene-did-enter-background", "state": "active", "needsAck": false, "sceneId": "left"], state: "active")
        daemon.push(["id": 5, "kind": "will-resign-active", "state": "inactive", "needsAck": false], state: "inactive")
        daemon.push(["id": 6, "kind": "did-enter-background", "state": "background", "needsAck": true], state: "background")
        daemon.push(["id": 7, "kind": "scene-snapshot", "state": "background", "needsAck": true, "sceneId": "left",
                     "path": .string(path)], state: "background")
        daemon.push(["id": 8, "kind": "scene-did-disconnect", "state": "background", "needsAck": false, "sceneId": "left"], state: "background")
        #expect(await eventually { delegate.log.count == 8 })
        #expect(delegate.log == [
            "connect left Shopping DSI-1", "active left", "resign left", "background left", "app resign", "app background",
            "snapshot left", "disconnect left",
        ])
        // The snapshot was written before its acknowledgement, which the library sent when the hook returned.
        #expect(await eventually { daemon.calls("Acknowledge").count == 2 })
        #expect(daemon.calls("Acknowledge").map { $0.parameters["eventId"] } == [6, 7])
        #expect(access(path, F_OK) == 0)
    }

    @Test func withoutASceneDelegateTheCheckInIsUnchanged() async throws {
        let dir = try FakeVarlinkServer.temporaryDirectory()
        let daemon = try FakeDaemon(path: dir + "/s")
        let app = BGApplication(
            appID: "org.example.Mail", socketPath: daemon.server.path, backoff: Backoff(initial: 0.01, maximum: 0.05),
            registersAsShared: false)
        defer {
            app.stop()
            daemon.server.stop()
        }
        app.start()
        #expect(await eventually { daemon.streams.count == 1 })
        #expect(daemon.calls("CheckIn").first?.parameters == ["appId": "org.example.Mail"])
    }
}
