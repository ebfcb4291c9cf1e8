import BGTaskCore
import Testing

private let maps = AppID("org.example.Maps")!
private let scope = InstanceID("user-1000.slice/user@1000.service/app.slice/app-gnome-org.example.Maps-1.scope")

/// SPEC §15: at start-up, the snapshots a previous run left are kept only for apps running now.
@Suite struct StaleSnapshotTests {
    @Test func onlyARunningAppKeepsTheSnapshotsOfAPreviousRun() {
        var h = Harness(manifests: [AppManifest(id: maps, lifecycleAware: false), AppManifest(id: mail)])
        h.send(.instanceAppeared(maps, scope, pid: 77))
        #expect(h.state(maps) == .active && h.state(mail) == .notRunning)
        let found = ["org.example.Mail", "org.example.Maps", "org.example.Unknown", "not an id", "."]
        #expect(h.machine.staleSnapshotDirectories(found) == ["org.example.Mail", "org.example.Unknown", "not an id", "."])
    }
}

/// An adopted app's snapshots go when its last instance does.
@Suite struct AdoptedSnapshotTests {
    @Test func anAdoptedAppKeepsItsSnapshotsUntilItsLastInstanceVanishes() {
        var h = Harness(manifests: [AppManifest(id: maps, lifecycleAware: false)])
        h.send(.instanceAppeared(maps, scope, pid: 77))
        #expect(h.machine.keepsSnapshots(of: maps))
        h.send(.instanceVanished(maps, scope))
        #expect(!h.machine.keepsSnapshots(of: maps))
        #expect(!h.machine.keepsSnapshots(of: AppID("org.example.Unknown")!))
    }
}
