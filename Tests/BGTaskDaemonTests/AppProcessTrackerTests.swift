import BGTaskCore
import Testing
@testable import BGTaskDaemon

/// Which processes are an app's under the signal freezer (AppProcessTracker), on a process table made by
/// hand: the daemon (pid 10) is a child subreaper, so orphans of app processes are its children.
@Suite struct AppProcessTrackerTests {
    typealias E = ProcessTable.Entry
    let mail = AppID("org.example.Mail")!
    let maps = AppID("org.example.Maps")!

    /// Mail's main process 100 (session leader) with a child 101; 200 daemonized itself (new session)
    /// and was re-parented to the daemon, with a child 201; Maps' main process 300; 400, the daemon's
    /// child with no BGTASKD_APP_ID (its environment cleared).
    static let table: [Int32: E] = [
        1: E(parent: 0, session: 1, startTime: 1), 10: E(parent: 1, session: 10, startTime: 5),
        100: E(parent: 10, session: 100, startTime: 50), 101: E(parent: 100, session: 100, startTime: 51),
        200: E(parent: 10, session: 200, startTime: 60), 201: E(parent: 200, session: 200, startTime: 61),
        300: E(parent: 10, session: 300, startTime: 70), 400: E(parent: 10, session: 400, startTime: 80),
    ]
    static let environment: [Int32: String] = [100: "org.example.Mail", 101: "org.example.Mail", 200: "org.example.Mail",
                                                 201: "org.example.Mail", 300: "org.example.Maps"]

    func tracker() -> AppProcessTracker { AppProcessTracker(daemonPID: 10) { Self.environment[$0] } }

    @Test func treeIsTheRootsTheirSessionsAndDescendants() {
        let t = ProcessTable(entries: Self.table)
        #expect(t.tree(roots: [100]) == [100, 101])
        #expect(t.tree(roots: [10]) == [10, 100, 101, 200, 201, 300, 400])
    }

    @Test func aDaemonizedDescendantIsTheAppsByItsEnvironment() {
        var t = tracker()
        #expect(t.members(of: mail, root: 100, table: ProcessTable(entries: Self.table)) == [100, 101, 200, 201])
        #expect(t.members(of: maps, root: 300, table: ProcessTable(entries: Self.table)) == [300])
    }

    @Test func whatIsLeftWhenTheMainProcessIsGoneIsStillTheApps() {
        var t = tracker()
        var table = Self.table
        table[100] = nil
        table[101]?.parent = 10  // orphaned: re-parented to the daemon
        #expect(t.members(of: mail, root: nil, table: ProcessTable(entries: table)) == [101, 200, 201])
    }

    @Test func aProcessSeenBeforeIsTheAppsWithoutItsEnvironmentButNotAfterItsPidIsReused() {
        var t = tracker()
        var table = Self.table
        // 400 is first seen as a child of Mail's main process; then its parent exits.
        table[400]?.parent = 101
        #expect(t.members(of: mail, root: 100, table: ProcessTable(entries: table)).contains(400))
        table[400]?.parent = 10
        #expect(t.members(of: mail, root: 100, table: ProcessTable(entries: table)).contains(400))
        // The same pid, another process (another start time): not Mail's.
        table[400]?.startTime = 99
        #expect(!t.members(of: mail, root: 100, table: ProcessTable(entries: table)).contains(400))
    }

    @Test func aForgottenAppRemembersNothing() {
        var t = tracker()
        var table = Self.table
        table[400]?.parent = 101
        _ = t.members(of: mail, root: 100, table: ProcessTable(entries: table))
        t.forget(mail)
        table[400]?.parent = 10
        #expect(!t.members(of: mail, root: 100, table: ProcessTable(entries: table)).contains(400))
    }
}
