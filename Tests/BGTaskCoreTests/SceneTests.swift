import BGTaskCore
import Testing

private let sceneA = SceneID("A")!
private let sceneB = SceneID("B")!

/// SPEC §15: a two-scene app, every transition of its scenes, the app's state derived from them, scene events
/// before the app-level events they cause, and the snapshot round before the freeze (time stepped by hand).
@Suite struct SceneTests {
    /// Mail launched active and checked in with `scenes: true`.
    func sceneApp(_ h: inout Harness) {
        h.send(.launchRequested(mail, background: false, exclusive: false))
        h.send(.appLaunched(mail, pid: 42))
        h.send(.appCheckedInForScenes(mail, connection: connA, pid: 42))
    }

    @discardableResult
    func set(_ h: inout Harness, _ scene: SceneID, _ state: SceneState, title: String? = nil) -> [Action] {
        h.send(.sceneStateChanged(mail, scene, state, title: title, output: nil, reason: .compositorFocus))
    }

    @Test func sceneNamesValidated() {
        #expect(SceneID("toplevel-12") != nil)
        #expect(SceneID("") == nil && SceneID(".") == nil && SceneID("..") == nil && SceneID("a/b") == nil)
        #expect(SceneID(String(repeating: "x", count: 65)) == nil)
        for state in SceneState.allCases { #expect(SceneState(rawValue: state.rawValue) == state) }
        #expect(SceneState.allCases.map(\.rawValue) == ["foreground-active", "foreground-inactive", "background", "disconnected"])
        #expect(LifecycleEventKind.sceneSnapshot.rawValue == "scene-snapshot")
        #expect(Reason.snapshotTimeout.rawValue == "snapshot-timeout")
    }

    @Test func everyTransitionOfATwoSceneApp() {
        var h = Harness()
        sceneApp(&h)
        // Connect A active: the app is active already; one decision, about the scene.
        let a = set(&h, sceneA, .foregroundActive, title: "Inbox")
        #expect(a.kinds == ["scene-will-connect A", "scene-will-enter-foreground A", "scene-did-become-active A"])
        #expect(a.events.first?.scene?.title == "Inbox")
        #expect(a.decisions.map(\.scene) == [sceneA] && a.decisions.first?.reason == .compositorFocus)
        #expect(a.replies == [.ok])
        // Connect B visible, not active.
        let b = set(&h, sceneB, .foregroundInactive)
        #expect(b.kinds == ["scene-will-connect B", "scene-will-enter-foreground B"])
        #expect(h.machine.scenes(of: mail).map(\.state) == [.foregroundActive, .foregroundInactive])
        // A active → inactive: no scene active, the app resigns active after the scene.
        let aInactive = set(&h, sceneA, .foregroundInactive)
        #expect(aInactive.kinds == ["scene-will-resign-active A", "will-resign-active"])
        #expect(h.state(mail) == .inactive)
        #expect(aInactive.decisions.map(\.scene) == [sceneA])
        // A inactive → active: the app becomes active after the scene.
        #expect(set(&h, sceneA, .foregroundActive).kinds == ["scene-did-become-active A", "did-become-active"])
        #expect(h.state(mail) == .active)
        // B inactive → active while A is active: no app-level change.
        let bActive = set(&h, sceneB, .foregroundActive)
        #expect(bActive.kinds == ["scene-did-become-active B"])
        #expect(bActive.decisions.map(\.detail) == [.sceneChanged(sceneB, from: .foregroundInactive, to: .foregroundActive)])
        // A active → background (minimized) while B is active: scene events only.
        #expect(set(&h, sceneA, .background).kinds == ["scene-will-resign-active A", "scene-did-enter-background A"])
        #expect(h.state(mail) == .active)
        // B active → background: the last foreground scene leaves, the app enters the background (grace window).
        let bBack = set(&h, sceneB, .background)
        #expect(bBack.kinds == [
            "scene-will-resign-active B", "scene-did-enter-background B", "will-resign-active", "did-enter-background",
        ])
        #expect(h.state(mail) == .background)
        #expect(bBack.decisions(.background).map(\.scene) == [sceneB])
        // A background → inactive: the app comes back, inactive.
        let aBack = set(&h, sceneA, .foregroundInactive)
        #expect(aBack.kinds == ["scene-will-enter-foreground A", "will-enter-foreground"])
        #expect(h.state(mail) == .inactive)
        #expect(aBack.decisions.map(\.detail) == [.cameToForegroundInactive])
        // A inactive → background: the app leaves again.
        #expect(set(&h, sceneA, .background).kinds == ["scene-did-enter-background A", "did-enter-background"])
        // A background → active: will-enter-foreground, did-become-active, each after its scene event.
        #expect(set(&h, sceneA, .foregroundActive).kinds == [
            "scene-will-enter-foreground A", "scene-did-become-active A", "will-enter-foreground", "did-become-active",
        ])
        #expect(h.state(mail) == .active)
        // B background → inactive while A active: scene event only.
        #expect(set(&h, sceneB, .foregroundInactive).kinds == ["scene-will-enter-foreground B"])
        // B inactive → background: scene event only.
        #expect(set(&h, sceneB, .background).kinds == ["scene-did-enter-background B"])
        // B (background) disconnects: scene event only; it is forgotten.
        #expect(set(&h, sceneB, .disconnected).kinds == ["scene-did-disconnect B"])
        #expect(h.machine.scenes(of: mail).map(\.id) == [sceneA])
        // A (active, the last scene) disconnects: the app enters the background.
        #expect(set(&h, sceneA, .disconnected).kinds == [
            "scene-will-resign-active A", "scene-did-enter-background A", "scene-did-disconnect A", "will-resign-active",
            "did-enter-background",
        ])
        #expect(h.state(mail) == .background)
        #expect(h.machine.scenes(of: mail).isEmpty)
        // An unknown scene that disconnects changes nothing.
        let ghost = set(&h, sceneB, .disconnected)
        #expect(ghost.kinds.isEmpty && ghost.decisions.isEmpty && ghost.replies == [.ok])
    }

    @Test func inactiveToActiveAndDisconnectOfAVisibleScene() {
        var h = Harness()
        sceneApp(&h)
        set(&h, sceneA, .foregroundInactive)
        #expect(h.state(mail) == .inactive)
        set(&h, sceneB, .foregroundInactive)
        // B inactive → disconnected with A inactive: scene events only.
        #expect(set(&h, sceneB, .disconnected).kinds == ["scene-did-enter-background B", "scene-did-disconnect B"])
        // The app's last (inactive) scene disconnects: background.
        #expect(set(&h, sceneA, .disconnected).kinds == [
            "scene-did-enter-background A", "scene-did-disconnect A", "did-enter-background",
        ])
    }

    @Test func suspendedAppComesBackWithAScene() {
        var h = Harness()
        sceneApp(&h)
        set(&h, sceneA, .foregroundActive)
        let back = set(&h, sceneA, .background)
        guard let dib = back.events.first(where: { $0.kind == .didEnterBackground }) else { return #expect(Bool(false)) }
        // Acknowledged: the snapshot round first, then the freeze once every snapshot is acknowledged.
        let ack = h.after(.seconds(1), .eventAcknowledged(dib.id))
        #expect(ack.kinds == ["scene-snapshot A"])
        #expect(ack.freezes.isEmpty)
        guard let snap = ack.events.first else { return #expect(Bool(false)) }
        #expect(snap.needsAck && snap.deadline == h.now + .seconds(1))
        let done = h.after(.milliseconds(200), .eventAcknowledged(snap.id))
        #expect(done.freezes == [mail])
        #expect(h.state(mail) == .suspended)
        // Thawed by its scene: resume, scene-will-enter-foreground, will-enter-foreground (inactive).
        let visible = set(&h, sceneA, .foregroundInactive)
        #expect(visible.thaws == [mail])
        #expect(visible.kinds == ["scene-will-enter-foreground A", "will-enter-foreground"])
        #expect(visible.decisions(.resume).map(\.scene) == [sceneA])
        #expect(h.state(mail) == .inactive)
        // The next background period takes its snapshots again.
        set(&h, sceneA, .background)
        let again = h.after(.seconds(1), .eventAcknowledged(h.lastEvent(.didEnterBackground)))
        #expect(again.kinds == ["scene-snapshot A"])
    }

    @Test func aSilentAppIsFrozenAtSnapshotTimeoutSec() {
        var h = Harness()
        sceneApp(&h)
        set(&h, sceneA, .foregroundActive)
        set(&h, sceneB, .background)
        set(&h, sceneA, .background)
        let ack = h.send(.eventAcknowledged(h.lastEvent(.didEnterBackground)))
        #expect(ack.kinds == ["scene-snapshot A", "scene-snapshot B"])
        let t0 = h.now
        // One acknowledged, one not: at 0.999 s nothing, at 1 s frozen regardless (warning decision).
        h.send(.eventAcknowledged(ack.events[0].id))
        #expect(h.at(t0 + .seconds(1) - .oneMicrosecond).freezes.isEmpty)
        let late = h.at(t0 + .seconds(1))
        #expect(late.freezes == [mail])
        #expect(late.decisions(.policy).map(\.reason) == [.snapshotTimeout])
        #expect(late.decisions(.policy).first?.detail == .snapshotsNotAcknowledged(missing: 1, within: .seconds(1)))
        // A late acknowledgement is harmless.
        #expect(h.send(.eventAcknowledged(ack.events[1].id)).freezes.isEmpty)
    }

    @Test func appLevelCallsMoveTheScenes() {
        var h = Harness()
        sceneApp(&h)
        set(&h, sceneA, .foregroundActive)
        set(&h, sceneB, .foregroundInactive)
        // Background(app): its foreground scenes go first, then the app.
        let back = h.send(.backgroundRequested(mail))
        #expect(back.kinds == [
            "scene-will-resign-active A", "scene-did-enter-background A", "scene-did-enter-background B",
            "will-resign-active", "did-enter-background",
        ])
        // Foreground(app): the scene last active comes back active, then the app.
        let front = h.send(.foregroundRequested(mail, exclusive: false))
        #expect(front.kinds == [
            "scene-will-enter-foreground A", "scene-did-become-active A", "will-enter-foreground", "did-become-active",
        ])
        #expect(h.machine.scenes(of: mail).map(\.state) == [.foregroundActive, .background])
    }

    @Test func anInterruptionResignsTheActiveSceneFirstAndItsEndBringsItBack() {
        var h = Harness()
        sceneApp(&h)
        set(&h, sceneA, .foregroundActive)
        set(&h, sceneB, .foregroundInactive)
        #expect(h.send(.interruptionBegan(mail)).kinds == ["scene-will-resign-active A", "will-resign-active"])
        #expect(h.send(.interruptionEnded(mail)).kinds == ["scene-did-become-active A", "did-become-active"])
        #expect(h.machine.scenes(of: mail).map(\.state) == [.foregroundActive, .foregroundInactive])
    }

    @Test func appsThatDidNotAskGetNoSceneEventsButFollowTheirScenes() {
        var h = Harness()
        h.launchActive(mail)  // CheckIn without scenes
        let a = set(&h, sceneA, .foregroundActive)
        #expect(a.kinds.isEmpty && a.decisions.map(\.scene) == [sceneA])
        let back = set(&h, sceneA, .background)
        #expect(back.kinds == ["will-resign-active", "did-enter-background"])
        // Acknowledged: frozen at once, no snapshot round for an app that did not ask.
        #expect(h.send(.eventAcknowledged(h.lastEvent(.didEnterBackground))).freezes == [mail])
        // A lifecycle-unaware app follows its scenes too (bgtaskd-focus's toplevels).
        h.send(.launchRequested(terminal, background: false, exclusive: false))
        h.send(.appLaunched(terminal, pid: 9))
        let t = h.send(.sceneStateChanged(terminal, sceneA, .background, title: nil, output: "HDMI-A-1", reason: .compositorFocus))
        #expect(t.decisions(.background).map(\.scene) == [sceneA])
        #expect(h.machine.scenes(of: terminal).first?.output == "HDMI-A-1")
    }

    @Test func refusals() {
        var h = Harness()
        let unknown = AppID("org.example.Unknown")!
        #expect(h.send(.sceneStateChanged(unknown, sceneA, .foregroundActive, title: nil, output: nil, reason: .userRequest)).replies
            == [.failure(.noSuchApp)])
        #expect(set(&h, sceneA, .foregroundActive).replies == [.invalidState(.notRunning)])
        sceneApp(&h)
        for n in 0..<64 { set(&h, SceneID("s\(n)")!, .background) }
        // (The first scene, reported in the background, sent the app there.)
        #expect(set(&h, sceneA, .background).replies == [.invalidState(.background)])
        // The app exits: its scenes go with it.
        h.send(.processExited(mail, pid: 42))
        #expect(h.machine.scenes(of: mail).isEmpty)
    }
}

extension Array where Element == Action {
    /// Each delivered event as "kind" or "kind sceneId".
    var kinds: [String] { events.map { $0.kind.rawValue + ($0.scene.map { " \($0.id)" } ?? "") } }
}

extension Harness {
    /// The id of the last event of `kind` delivered.
    func lastEvent(_ kind: LifecycleEventKind) -> EventID {
        log.events.last { $0.kind == kind }?.id ?? EventID(0)
    }
}
