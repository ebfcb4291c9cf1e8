import BGTaskFocus
import Testing

/// SPEC §14: the owner of a bus name mapped to its app (bgtaskd-focus's bus watch).
@Suite struct BusOwnerMatchTests {
    let apps = [
        BusOwnerMatch.Candidate(appID: "org.gnome.Maps", pid: 100),
        BusOwnerMatch.Candidate(appID: "org.example.Mail", pid: 200),
        BusOwnerMatch.Candidate(appID: "org.example.Gone", pid: nil),
    ]
    // 300 is a child of 200; 400 of 300; 500 of init; 600 of 500 (an adopted app's helper).
    let parents: [Int64: Int64] = [100: 1, 200: 1, 300: 200, 400: 300, 500: 1, 600: 500, 700: 1]
    let leaves: [Int64: String] = [
        600: "app-gnome-org.gnome.Maps-4242.scope", 500: "app-gnome-org.gnome.Maps-4242.scope",
        700: "app-gnome-org.gnome.MapsExtra-1.scope",
    ]

    func owner(_ pid: Int64) -> String? {
        BusOwnerMatch.app(owning: pid, among: apps, parent: { parents[$0] }, cgroupLeaf: { leaves[$0] })
    }

    @Test func theAppsProcessAndItsDescendantsAreTheApp() {
        #expect(owner(200) == "org.example.Mail")
        #expect(owner(400) == "org.example.Mail")
    }

    @Test func aProcessInTheAppsOwnCgroupIsTheApp() {
        #expect(owner(600) == "org.gnome.Maps")
        // A cgroup of another app whose ID merely starts with this one's is not this app.
        #expect(owner(700) == nil)
    }

    @Test func bgtaskdsOwnAppCgroupNamesTheApp() {
        let found = BusOwnerMatch.app(owning: 900, among: apps, parent: { _ in 1 }, cgroupLeaf: { _ in "org.example.Gone" })
        #expect(found == "org.example.Gone")
    }

    @Test func othersAreNoApp() {
        #expect(BusOwnerMatch.app(owning: 1, among: apps, parent: { _ in 0 }, cgroupLeaf: { _ in "init.scope" }) == nil)
        #expect(BusOwnerMatch.app(owning: 800, among: apps, parent: { _ in nil }, cgroupLeaf: { _ in nil }) == nil)
        // A loop in the parent chain (a pid reused mid-walk) ends.
        #expect(BusOwnerMatch.app(owning: 5, among: apps, parent: { $0 == 5 ? 6 : 5 }, cgroupLeaf: { _ in nil }) == nil)
    }
}
