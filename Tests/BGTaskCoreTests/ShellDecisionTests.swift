import BGTaskCore
import Testing

/// issue 13: decisions the shell once took itself, now core inputs with a decision and its reason: who may
/// call for an app (and its reload), who may acknowledge, who may control; the kill of a process a launcher
/// started after its launch was called off; the kill of a spawned process whose app counts as gone; and
/// replies that name the request they answer, actions that carry the pid they act on.
@Suite struct ShellDecisionTests {
    static let owner: UInt32 = 1000
    static let stranger: UInt32 = 2000
    func caller(_ uid: UInt32, gid: UInt32? = nil) -> Caller { Caller(pid: 77, uid: uid, gid: gid ?? uid) }

    func harness(uid: UInt32 = owner, controlGroup: UInt32? = nil) -> Harness {
        Harness(
            config: LifecycleConfig(controlGroup: controlGroup),
            manifests: [AppManifest(id: mail, uid: uid), AppManifest(id: terminal, lifecycleAware: false, uid: uid)])
    }

    @Test func onlyRootAndTheAppsUserMayCallForIt() {
        var h = harness()
        #expect(h.send(.appCallReceived(mail, method: "BeginBackgroundTask", caller: caller(Self.owner))) == [.reply(.ok, to: nil)])
        #expect(h.send(.appCallReceived(mail, method: "BeginBackgroundTask", caller: caller(0))) == [.reply(.ok, to: nil)])
        let denied = h.send(.appCallReceived(mail, method: "CheckIn", caller: caller(Self.stranger)))
        #expect(denied.replies == [.failure(.permissionDenied)])
        #expect(denied.decisions.map(\.reason) == [.permissionDenied])
        #expect(denied.decisions.first?.kind == .deny && denied.decisions.first?.severity == .warning)
        #expect(denied.decisions.first?.detail == .callerNotAppUser(method: "CheckIn", caller: caller(Self.stranger)))
        #expect(h.send(.appCallReceived(music, method: "CheckIn", caller: caller(0))).replies == [.failure(.noSuchApp)])
    }

    /// issue 15: the shell's fast path asks `allowsAppCall` and feeds `appCallReceived` only when it says
    /// no; the two must agree in every case (owner, root, stranger, unknown app, adopted instances, reload).
    @Test func theFastPermissionQueryAgreesWithTheDecision() {
        var h = harness()
        func agree(_ app: AppID, _ uid: UInt32) -> Bool? {
            let allowed = h.machine.allowsAppCall(app, caller: caller(uid))
            let decided = h.send(.appCallReceived(app, method: "BeginBackgroundTask", caller: caller(uid))).replies == [.ok]
            return allowed == decided ? allowed : nil
        }
        #expect(agree(mail, Self.owner) == true)
        #expect(agree(mail, 0) == true)
        #expect(agree(mail, Self.stranger) == false)
        #expect(agree(music, 0) == false)
        let scope = InstanceID("user.slice/user-2000.slice/user@2000.service/app.slice/app-x.scope")
        h.send(.instanceAppeared(mail, scope, pid: 5))
        #expect(agree(mail, Self.stranger) == true)
        #expect(agree(mail, Self.owner) == false)
        h.send(.instanceVanished(mail, scope))
        h.send(.appRegistered(AppManifest(id: mail, uid: Self.stranger)))
        #expect(agree(mail, Self.stranger) == true)
        #expect(agree(mail, Self.owner) == false)
        // Asking decides nothing: no action, no deadline.
        let before = h.machine.nextDeadline
        _ = h.machine.allowsAppCall(mail, caller: caller(Self.owner))
        #expect(h.send(.deadlineReached).isEmpty)
        #expect(h.machine.peekNextDeadline() == before)
    }

    /// SPEC §13: an adopted app's users are the owners of its instances (their user managers), not `User=`.
    @Test func theOwnersOfAnAdoptedAppsInstancesMayCallForIt() {
        var h = harness()
        let scope = InstanceID("user.slice/user-2000.slice/user@2000.service/app.slice/app-x.scope")
        h.send(.instanceAppeared(mail, scope, pid: 5))
        #expect(h.send(.appCallReceived(mail, method: "CheckIn", caller: caller(Self.stranger))).replies == [.ok])
        #expect(h.send(.appCallReceived(mail, method: "CheckIn", caller: caller(Self.owner))).replies == [.failure(.permissionDenied)])
        h.send(.instanceVanished(mail, scope))
        #expect(h.send(.appCallReceived(mail, method: "CheckIn", caller: caller(Self.owner))).replies == [.ok])
    }

    /// The bug of issue 13: a reload that changes `User=` re-registers the manifest; the new uid decides.
    @Test func aReloadedUserDecides() {
        var h = harness()
        h.send(.appRegistered(AppManifest(id: mail, uid: Self.stranger)))
        #expect(h.send(.appCallReceived(mail, method: "RefreshStatus", caller: caller(Self.stranger))).replies == [.ok])
        #expect(h.send(.appCallReceived(mail, method: "RefreshStatus", caller: caller(Self.owner))).replies
            == [.failure(.permissionDenied)])
    }

    @Test func anotherUsersAcknowledgementIsRefusedAndTheAppStaysInTheBackground() {
        var h = harness()
        h.launchActive(mail)
        guard let event = h.background(mail) else { return #expect(Bool(false)) }
        let refused = h.send(.eventAcknowledged(event.id, caller: caller(Self.stranger)))
        #expect(refused.replies == [.failure(.permissionDenied)])
        #expect(refused.decisions.first?.detail == .acknowledgeNotAppUser(event: event.id, caller: caller(Self.stranger)))
        #expect(refused.freezes.isEmpty)
        #expect(h.state(mail) == .background)
        let accepted = h.send(.eventAcknowledged(event.id, caller: caller(Self.owner)))
        #expect(accepted.replies == [.ok])
        #expect(accepted.freezes == [mail])
    }

    @Test func controlIsForRootAndTheControlGroup() {
        var h = harness(controlGroup: 500)
        #expect(h.send(.controlCallReceived(caller: caller(0), groups: [])).replies == [.ok])
        #expect(h.send(.controlCallReceived(caller: caller(Self.owner, gid: 500), groups: [])).replies == [.ok])
        #expect(h.send(.controlCallReceived(caller: caller(Self.owner), groups: [20, 500])).replies == [.ok])
        #expect(h.send(.controlCallReceived(caller: caller(Self.owner), groups: [20])).replies == [.failure(.permissionDenied)])
        var none = harness()
        #expect(none.send(.controlCallReceived(caller: caller(Self.owner, gid: 500), groups: [500])).replies
            == [.failure(.permissionDenied)])
    }

    @Test func aProcessStartedAfterItsLaunchWasCalledOffIsKilled() {
        var h = harness()
        #expect(h.send(.launchRequested(mail, background: false, exclusive: false)).launches == [mail])
        // Terminated before the launcher answered: the launch is cancelled.
        #expect(h.send(.terminateRequested(mail)).replies == [.ok])
        let late = h.send(.appLaunched(mail, pid: 4321))
        guard case .kill(mail, let processes, let decision)? = late.first else { return #expect(Bool(false), "\(late)") }
        #expect(processes == Processes(pid: 4321))
        #expect(decision.kind == .terminate && decision.reason == .userRequest)
        #expect(decision.detail == .lateLaunchKilled(pid: 4321))
        #expect(h.state(mail) == .notRunning)
    }

    @Test func anAnswerForTheProcessThatAlreadyCheckedInChangesNothing() {
        var h = harness()
        h.send(.launchRequested(mail, background: false, exclusive: false))
        h.send(.appCheckedIn(mail, connection: connA, pid: 55))
        #expect(h.send(.appLaunched(mail, pid: 55)).isEmpty)
        #expect(h.state(mail) == .active)
    }

    @Test func aFailedLaunchEmptiesTheAppsCgroup() {
        var h = harness()
        h.send(.launchRequested(terminal, background: false, exclusive: false))
        let failed = h.send(.launchFailed(terminal, message: "exec: No such file or directory"))
        guard case .kill(terminal, let processes, let decision)? = failed.first else { return #expect(Bool(false)) }
        #expect(processes == Processes(pid: nil))
        #expect(decision.kind == .launch && decision.reason == .launchFailed)
    }

    @Test func aLaunchForAnAppForgottenMeanwhileIsKilled() {
        var h = harness()
        h.send(.launchRequested(mail, background: false, exclusive: false))
        h.send(.appUnregistered(mail))
        let late = h.send(.appLaunched(mail, pid: 99))
        #expect(late.kills == [mail])
        #expect(late.decisions.map(\.reason) == [.manifestRemoved])
    }

    /// A spawned process whose app now counts as gone (it checked in as if started by hand after its
    /// launch was called off, then closed its stream) is killed, not left unmanaged.
    @Test func aSpawnedProcessOfAnAppThatIsGoneIsKilledWhenItsStreamCloses() {
        var h = harness()
        h.send(.launchRequested(mail, background: false, exclusive: false))
        h.send(.terminateRequested(mail))
        #expect(h.send(.appLaunched(mail, pid: 600)).kills == [mail])
        // It checks in before the kill lands: the core takes it for an app started by hand.
        h.send(.appCheckedIn(mail, connection: connB, pid: 600))
        #expect(h.state(mail) == .active)
        let closed = h.send(.connectionClosed(connB))
        #expect(h.state(mail) == .notRunning)
        guard case .kill(mail, let processes, let decision)? = closed.last else { return #expect(Bool(false), "\(closed)") }
        #expect(processes.pid == 600)
        #expect(decision.reason == .clientDisconnected && decision.detail == .orphanKilled(pid: 600))
        // One started by hand (never spawned) is only forgotten.
        h.send(.appCheckedIn(mail, connection: connC, pid: 700))
        #expect(h.send(.connectionClosed(connC)).kills.isEmpty)
    }

    @Test func repliesNameTheirRequestAndKillsTheirPid() {
        var h = harness()
        h.launchActive(mail, pid: 321)
        let actions = h.machine.handle(.terminateRequested(mail), now: h.now, request: RequestID(9))
        #expect(actions.contains(.reply(.ok, to: RequestID(9))))
        let escalated = h.machine.handle(.deadlineReached, now: h.now + .seconds(5))
        guard case .terminate(mail, let processes, _)? = escalated.first else { return #expect(Bool(false), "\(escalated)") }
        #expect(processes.pid == 321)
    }

    /// The stop's time limit is a deadline of the core (the shell has one timer per clock): 5 s + 2 × 5 s + 1 s.
    @Test func theStopIsOverWhenEveryStartedAppExitedOrAtItsLimit() {
        var h = harness()
        h.send(.launchRequested(terminal, background: false, exclusive: false))
        h.send(.appLaunched(terminal, pid: 300))
        let t0 = h.now
        let stop = h.send(.stopRequested)
        #expect(stop.sigterms == [terminal] && !stop.contains { if case .stopFinished = $0 { true } else { false } })
        #expect(h.at(t0 + .seconds(16) - .oneMicrosecond).allSatisfy { if case .stopFinished = $0 { false } else { true } })
        #expect(h.at(t0 + .seconds(16)).last == .stopFinished(unexited: [terminal]))

        var quick = harness()
        quick.send(.launchRequested(terminal, background: false, exclusive: false))
        quick.send(.appLaunched(terminal, pid: 300))
        quick.send(.stopRequested)
        #expect(quick.send(.processExited(terminal, pid: 300)).last == .stopFinished(unexited: []))
        #expect(quick.machine.nextDeadline == nil)
        var idle = harness()
        #expect(idle.send(.stopRequested) == [.stopFinished(unexited: [])])
    }

    /// The shell drops an app's cgroup when the core says the app has no process left, not by asking it.
    @Test func anExitReleasesTheAppsCgroupAStaleOneDoesNot() {
        var h = harness()
        h.launchActive(mail, pid: 9)
        #expect(h.send(.processExited(mail, pid: 8)).isEmpty)
        let exit = h.send(.processExited(mail, pid: 9))
        #expect(exit.decisions.map(\.reason) == [.appExited])
        #expect(exit.last == .release(mail))
        // A spawned process of an app forgotten meanwhile: its cgroup goes too; a pid never spawned is ignored.
        h.send(.launchRequested(mail, background: false, exclusive: false))
        h.send(.appUnregistered(mail))
        #expect(h.send(.appLaunched(mail, pid: 10)).kills == [mail])
        #expect(h.send(.processExited(mail, pid: 10)) == [.release(mail)])
        #expect(h.send(.processExited(mail, pid: 11)).isEmpty)
    }
}
