@testable import BGTaskCore
import Testing

private let maps = AppID("org.example.Maps")!
private let unknown = AppID("org.example.Unknown")!

/// What the refresh machine reads of each app (`LifecycleMachine.refreshFacts(of:)`, read in place while the
/// refresh machine decides) is what the app's whole snapshot says, app by app, through the states that change
/// it: foreground, a task waiting for the background, a running task, suspended, a suspension held back
/// (reported as background), terminating, not lifecycle-aware, unknown.
@Suite struct RefreshFactsTests {
    private func expectSame(_ h: Harness, _ comment: String) {
        for app in [mail, music, terminal, maps, unknown] {
            let fromSnapshot = h.snapshot(app).map {
                RefreshAppFacts(
                    state: $0.state, lifecycleAware: $0.lifecycleAware, terminating: $0.terminating,
                    runningTasks: Set($0.runningTasks.map(\.identifier)), waitingTasks: Set($0.waitingTasks))
            }
            #expect(h.machine.refreshFacts(of: app) == fromSnapshot, "\(comment): \(app.rawValue)")
        }
    }

    @Test func theFactsAreWhatTheSnapshotSays() {
        var h = Harness(manifests: Harness.standardManifests + [AppManifest(id: maps)])
        expectSame(h, "registered")
        h.launchActive(music, connection: connA, pid: 100)
        h.launchActive(terminal, connection: connB, pid: 101)
        h.launchActive(maps, connection: connC, pid: 102)
        // A task that falls due in the foreground waits for the background (SPEC §6).
        h.send(.taskRunRequested(music, identifier: "r", kind: .refresh, reason: .userRequest))
        expectSame(h, "a waiting task")
        #expect(h.machine.refreshFacts(of: music)?.waitingTasks == ["r"])
        // In the background it runs.
        if let event = h.background(music) { h.send(.eventAcknowledged(event.id)) }
        expectSame(h, "a running task")
        #expect(h.machine.refreshFacts(of: music)?.runningTasks == ["r"])
        // Suspended once the task ends and the grace is over.
        h.send(.taskCompleted(music, identifier: "r", success: true))
        h.after(.seconds(60))
        expectSame(h, "suspended")
        #expect(h.machine.refreshFacts(of: music)?.state == .suspended)
        // Terminating.
        h.send(.terminateRequested(maps))
        expectSame(h, "terminating")
        #expect(h.machine.refreshFacts(of: maps)?.terminating == true)
        h.launchActive(mail, connection: ConnectionID(4), pid: 103)
        if let event = h.background(mail) { h.send(.eventAcknowledged(event.id)) }
        expectSame(h, "mail in its grace window")
        #expect(h.machine.refreshFacts(of: terminal)?.lifecycleAware == false)
        #expect(h.machine.refreshFacts(of: unknown) == nil)
    }
}
