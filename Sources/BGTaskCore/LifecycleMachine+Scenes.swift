// SPEC §15: scenes. The app's state follows its scenes; scene events go (to apps that asked for them)
// before the app-level events they cause; `scene-snapshot` before the freeze.
extension LifecycleMachine {
    /// The scenes of `app` as the core sees them, in the order they were first reported (for `AppInfo.scenes`).
    public func scenes(of app: AppID) -> [SceneSnapshot] {
        guard let i = slots[app] else { return [] }
        return records[i].scenes.list.map {
            SceneSnapshot(id: $0.ref.id, title: $0.ref.title, output: $0.ref.output, state: $0.state)
        }
    }

    /// `SetSceneState`: the scene changes (scene events), then the app follows (app-level events, one
    /// decision). A change that leaves the app's state as it was is one decision about the scene.
    mutating func sceneStateChanged(
        _ app: AppID, _ scene: SceneID, _ state: SceneState, title: String?, output: String?, reason: Reason
    ) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        guard records[i].termination == nil, records[i].state != .notRunning else { return refuseInState(i) }
        let existing = records[i].scenes.index(scene)
        if existing == nil {
            if state == .disconnected { return reply(.ok) }  // an unknown scene closed: nothing changes
            guard records[i].scenes.list.count < AppScenes.limit else { return refuseInState(i) }
        }
        decidingScene = scene
        defer { decidingScene = nil }
        let from = existing.map { records[i].scenes.list[$0].state }
        let k: Int
        if let existing {
            k = existing
        } else {
            records[i].scenes.list.append(SceneRecord(ref: SceneRef(id: scene), state: .background))
            k = records[i].scenes.list.count - 1
        }
        if let title { records[i].scenes.list[k].ref.title = title }
        if let output { records[i].scenes.list[k].ref.output = output.isEmpty ? nil : output }
        if existing == nil { deliverScene(i, .sceneWillConnect, records[i].scenes.list[k].ref) }
        moveScene(i, k, to: state)
        let appChanged = followScenes(i, reason: reason)
        if !appChanged, from != state {
            record(
                state.isForeground ? .foreground : .background, reason, i, previous: records[i].state,
                .sceneChanged(scene, from: from, to: state))
        }
        reply(.ok)
    }

    /// Moves scene `k` of app `i` to `state`, delivering its scene events; a disconnected scene is forgotten.
    mutating func moveScene(_ i: Int, _ k: Int, to state: SceneState) {
        let from = records[i].scenes.list[k].state
        let ref = records[i].scenes.list[k].ref
        guard from != state else { return }
        switch state {
        case .foregroundActive:
            if from == .background { deliverScene(i, .sceneWillEnterForeground, ref) }
            records[i].scenes.activations += 1
            records[i].scenes.list[k].lastActive = records[i].scenes.activations
            records[i].scenes.list[k].state = state
            deliverScene(i, .sceneDidBecomeActive, ref)
        case .foregroundInactive:
            records[i].scenes.list[k].state = state
            deliverScene(i, from == .background ? .sceneWillEnterForeground : .sceneWillResignActive, ref)
        case .background, .disconnected:
            if from == .foregroundActive { deliverScene(i, .sceneWillResignActive, ref) }
            records[i].scenes.list[k].state = .background
            if from.isForeground { deliverScene(i, .sceneDidEnterBackground, ref) }
            if state == .disconnected {
                records[i].scenes.list.remove(at: k)
                deliverScene(i, .sceneDidDisconnect, ref)
            }
        }
    }

    /// Brings app `i` to the state its scenes call for (its last scene gone: the background); `true` when
    /// that changed it (a decision was recorded).
    mutating func followScenes(_ i: Int, reason: Reason) -> Bool {
        let target = records[i].scenes.derivedState ?? .background
        let current = records[i].state
        switch (target, current) {
        case (.active, .inactive):
            records[i].interrupted = false
            records[i].state = .active
            records[i].lastUsed = now
            deliver(i, .didBecomeActive)
            record(.foreground, reason, i, previous: .inactive, .becameActive)
        case (.active, .background), (.active, .suspended):
            leaveBackgroundForDevice(i)
            if current == .suspended { thaw(i, reason: reason) }
            enterForeground(i, reason: reason, previous: current)
        case (.inactive, .active):
            records[i].state = .inactive
            deliver(i, .willResignActive)
            record(.foreground, reason, i, previous: .active, .resignedActive)
        case (.inactive, .background), (.inactive, .suspended):
            leaveBackgroundForDevice(i)
            if current == .suspended { thaw(i, reason: reason) }
            enterForegroundInactive(i, reason: reason, previous: current)
        case (.background, .active), (.background, .inactive):
            sendToBackground(i, reason: reason)
        default:
            return false
        }
        return true
    }

    /// Sequence 3 stopped at `inactive`: `will-enter-foreground` (a scene is visible, none active).
    mutating func enterForegroundInactive(_ i: Int, reason: Reason, previous: AppState) {
        let app = records[i].id
        clearGrace(i)
        deadlines.cancel(.budgetWarning(app))
        deadlines.cancel(.budgetEnd(app))
        records[i].backgroundSince = nil
        for task in records[i].assertions { assertionTable.setWarned(task, false) }
        records[i].state = .inactive
        records[i].lastUsed = now
        deliver(i, .willEnterForeground)
        record(.foreground, reason, i, previous: previous, .cameToForegroundInactive)
    }

    /// An app-level move to the background (`Background`, another app's focus, a locked screen): its
    /// foreground scenes go first, with their events.
    mutating func sendScenesToBackground(_ i: Int) {
        for k in records[i].scenes.list.indices where records[i].scenes.list[k].state.isForeground {
            moveScene(i, k, to: .background)
        }
    }

    /// An interruption (`Interrupt`): the active scenes resign active first, as UIKit's do.
    mutating func resignActiveScenes(_ i: Int) {
        for k in records[i].scenes.list.indices where records[i].scenes.list[k].state == .foregroundActive {
            moveScene(i, k, to: .foregroundInactive)
        }
    }

    /// An app-level move to active (`Foreground`, `SetFocus`): with no scene active, one becomes active first —
    /// a visible one if any, else the one last active (the App Switcher brings back the window the user left).
    mutating func bringLastSceneForward(_ i: Int) {
        let list = records[i].scenes.list
        guard !list.isEmpty, !list.contains(where: { $0.state == .foregroundActive }) else { return }
        func rank(_ s: SceneRecord) -> (Int, UInt64) { (s.state == .foregroundInactive ? 1 : 0, s.lastActive) }
        var best = 0
        for k in list.indices where rank(list[k]) > rank(list[best]) { best = k }
        moveScene(i, best, to: .foregroundActive)
    }

    /// A scene event, to an app that checked in with `scenes: true`.
    @discardableResult
    mutating func deliverScene(
        _ i: Int, _ kind: LifecycleEventKind, _ ref: SceneRef, needsAck: Bool = false, deadline: Instant? = nil
    ) -> EventID? {
        guard records[i].scenes.subscribed else { return nil }
        return deliver(i, kind, needsAck: needsAck, deadline: deadline, scene: ref)
    }

    // MARK: - Snapshots

    /// Before app `i` is frozen: once per background period, each scene gets `scene-snapshot` (to
    /// acknowledge within `SnapshotTimeoutSec`). `true`: the freeze waits for that round. The shell makes the
    /// snapshot's directory as it delivers the event, and checks the files as it performs the freeze.
    mutating func awaitSnapshots(_ i: Int) -> Bool {
        let scenes = records[i].scenes
        guard scenes.subscribed, records[i].manifest.lifecycleAware, records[i].connection != nil, !scenes.list.isEmpty
        else { return false }
        let app = records[i].id
        let since = records[i].backgroundSince
        if let wait = scenes.wait {
            if wait.backgroundSince == since { return true }
            for event in wait.events.keys { pendingAcks[event] = nil }  // a round of an earlier period
            records[i].scenes.wait = nil
        }
        if scenes.takenFor != nil, scenes.takenFor == since { return false }
        records[i].scenes.takenFor = since
        let end = now + nonNegative(config.snapshotTimeout)
        var events: [EventID: SceneID] = [:]
        for scene in scenes.list {
            guard let event = deliverScene(i, .sceneSnapshot, scene.ref, needsAck: true, deadline: end) else { continue }
            events[event] = scene.ref.id
            pendingAcks[event] = app
        }
        records[i].scenes.wait = SnapshotWait(events: events, backgroundSince: since)
        deadlines.arm(.snapshot(app), at: end)
        return true
    }

    /// `Acknowledge` of a `scene-snapshot`: `true` when `event` was one. The last one ends the round.
    mutating func snapshotAcknowledged(_ i: Int, _ event: EventID) -> Bool {
        guard var wait = records[i].scenes.wait, wait.events.removeValue(forKey: event) != nil else { return false }
        records[i].scenes.wait = wait
        if wait.events.isEmpty { snapshotWaitEnded(i, timedOut: false) }
        return true
    }

    /// The snapshot round is over (all acknowledged, or `SnapshotTimeoutSec`): the app is frozen if it still
    /// is due to be.
    mutating func snapshotWaitEnded(_ i: Int, timedOut: Bool) {
        guard let wait = records[i].scenes.wait else { return }
        let app = records[i].id
        records[i].scenes.wait = nil
        deadlines.cancel(.snapshot(app))
        for event in wait.events.keys { pendingAcks[event] = nil }
        if timedOut, !wait.events.isEmpty {
            record(
                .policy, .snapshotTimeout, i, severity: .warning,
                .snapshotsNotAcknowledged(missing: wait.events.count, within: nonNegative(config.snapshotTimeout)))
        }
        maybeSuspend(i)
    }
}
