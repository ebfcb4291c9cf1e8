import BGTaskCore
import Testing

/// SPEC §15 as properties: random scene changes (and app-level moves and acknowledgements) for two apps,
/// one checked in with scenes; after every input the app's state is the one its scenes call for, every
/// scene's events follow UIKit's scene state machine to the state the core reports, and scene events come
/// before the app-level lifecycle events of the same input.
@Suite struct ScenePropertyTests {
    struct Rng {
        var state: UInt64
        mutating func next() -> UInt64 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return state >> 33
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    }

    enum Seen: Equatable { case background, inactive, active }

    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func scenesDriveTheAppInOrder(seed: UInt64) {
        var rng = Rng(state: seed)
        var h = Harness()
        h.send(.launchRequested(mail, background: false, exclusive: false))
        h.send(.appLaunched(mail, pid: 42))
        h.send(.appCheckedInForScenes(mail, connection: connA, pid: 42))
        h.launchActive(music, connection: connB, pid: 43)
        let ids = ["a", "b", "c"].compactMap(SceneID.init)
        let states = SceneState.allCases
        var seen: [AppID: [String: Seen]] = [mail: [:], music: [:]]
        var failures: [String] = []
        for step in 0..<400 {
            let app = rng.below(3) == 0 ? music : mail
            let input: Input
            switch rng.below(10) {
            case 0: input = .backgroundRequested(app)
            case 1: input = .foregroundRequested(app, exclusive: false)
            case 2:
                let pending = h.log.events(for: app).filter(\.needsAck).map(\.id)
                input = .eventAcknowledged(pending.isEmpty ? EventID(1) : pending[rng.below(pending.count)])
            case 3: input = rng.below(3) == 0 ? .interruptionBegan(app) : rng.below(2) == 0 ? .interruptionEnded(app) : .deadlineReached
            default:
                input = .sceneStateChanged(
                    app, ids[rng.below(ids.count)], states[rng.below(states.count)], title: nil, output: nil,
                    reason: .compositorFocus)
            }
            let actions = rng.below(4) == 0 ? h.after(.milliseconds(700), input) : h.send(input)
            // Scene events first, then the app-level lifecycle events they cause.
            let lifecycle: Set<LifecycleEventKind> = [.willEnterForeground, .didBecomeActive, .willResignActive, .didEnterBackground]
            for a in [mail, music] {
                let kinds = actions.events(for: a).map(\.kind).filter { lifecycle.contains($0) || ($0.isSceneEvent && $0 != .sceneSnapshot) }
                if let firstApp = kinds.firstIndex(where: { lifecycle.contains($0) }),
                    kinds[firstApp...].contains(where: \.isSceneEvent)
                {
                    failures.append("step \(step) \(input): \(kinds)")
                }
            }
            // Each scene's events follow the scene state machine.
            for e in actions.events(for: mail) where e.kind.isSceneEvent {
                guard let id = e.scene?.id.rawValue else { failures.append("step \(step): \(e.kind) without a scene"); continue }
                let before = seen[mail]?[id]
                var after: Seen? = before
                switch (e.kind, before) {
                case (.sceneWillConnect, nil): after = .background
                case (.sceneWillEnterForeground, .background?): after = .inactive
                case (.sceneDidBecomeActive, .inactive?): after = .active
                case (.sceneWillResignActive, .active?): after = .inactive
                case (.sceneDidEnterBackground, .inactive?): after = .background
                case (.sceneDidDisconnect, .background?): after = nil
                case (.sceneSnapshot, .background?): break
                default: failures.append("step \(step): \(e.kind.rawValue) of \(id) after \(String(describing: before))")
                }
                seen[mail]?[id] = after
            }
            #expect(actions.events(for: music).allSatisfy { !$0.kind.isSceneEvent }, "music did not ask for scenes")
            // The app's scenes as seen equal the core's, and the app's state is the one they call for.
            for a in [mail, music] {
                let scenes = h.machine.scenes(of: a)
                if a == mail {
                    let core = Dictionary(uniqueKeysWithValues: scenes.map { s -> (String, Seen) in
                        (s.id.rawValue, s.state == .foregroundActive ? .active : s.state == .foregroundInactive ? .inactive : .background)
                    })
                    if core != seen[mail] { failures.append("step \(step): seen \(seen[mail] ?? [:]), core \(core)") }
                }
                guard !scenes.isEmpty, let state = h.state(a) else { continue }
                let want: Set<AppState> = scenes.contains { $0.state == .foregroundActive } ? [.active]
                    : scenes.contains { $0.state == .foregroundInactive } ? [.inactive] : [.background, .suspended]
                if !want.contains(state) { failures.append("step \(step) \(input): \(a) is \(state), scenes \(scenes.map(\.state))") }
            }
            if failures.count > 5 { break }
        }
        #expect(failures.isEmpty, "\(failures.prefix(5))")
    }
}
