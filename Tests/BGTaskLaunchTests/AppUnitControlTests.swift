import BGTaskLaunch
import BGTaskProtocol
import Testing

/// SPEC §13: what bgtaskd-launcher's ControlAppUnit accepts, by name (the opened directory's owner is
/// checked as well, in IntegrationTests/integration/test_device.py).
@Suite struct AppUnitControlTests {
    static let mount = "/sys/fs/cgroup"
    static let root = "/sys/fs/cgroup/user.slice"
    static let unit = root + "/user-1000.slice/user@1000.service/app.slice/"

    @Test("accepted", arguments: [
        (unit + "app-gnome-org.gnome.Maps-12.scope", UInt32(1000)),
        (unit + "app-org.example.A@autostart.service", UInt32(1000)),
        (root + "/user-0.slice/user@0.service/app.slice/app-x-1.scope", UInt32(0)),
    ])
    func accepted(path: String, uid: UInt32) throws {
        #expect(try AppUnitControl.check(path, mount: Self.mount, adoptRoot: Self.root).get() == uid)
    }

    @Test("refused", arguments: [
        "/sys/fs/cgroup", root, unit + "gnome-terminal-server.service", unit + "app-x.slice",
        unit + "app-x-1.scope/child", root + "/user-1000.slice/user@1001.service/app.slice/app-x-1.scope",
        root + "/user-1000.slice/user@1000.service/session.slice/app-x-1.scope",
        root + "/user-x.slice/user@x.service/app.slice/app-x-1.scope",
        unit + "../app.slice/app-x-1.scope", unit + "./app-x-1.scope", "/etc/passwd",
        "/sys/fs/cgroup/system.slice/bgtaskd.service/apps/app-x-1.scope", "relative/app-x-1.scope",
    ])
    func refused(path: String) {
        guard case .failure(let f) = AppUnitControl.check(path, mount: Self.mount, adoptRoot: Self.root) else {
            Issue.record("accepted \(path)")
            return
        }
        #expect(f.kind == .permissionDenied)
    }

    @Test func decoding() throws {
        let call = AppUnitControl.call(cgroup: Self.unit + "app-x-1.scope", action: .freeze)
        #expect(call.oneway)
        let decoded = try AppUnitControl.decode(call.parameters)
        #expect(decoded.cgroup == Self.unit + "app-x-1.scope" && decoded.action == .freeze)
        #expect(throws: LaunchFailure.self) { try AppUnitControl.decode(["cgroup": "/x", "action": "melt"]) }
        #expect(throws: LaunchFailure.self) { try AppUnitControl.decode(["cgroup": "/x", "action": "kill", "argv": "sh"]) }
        #expect(AppUnitControl.Action.kill.file == ("cgroup.kill", "1") ? true : false)
    }
}
