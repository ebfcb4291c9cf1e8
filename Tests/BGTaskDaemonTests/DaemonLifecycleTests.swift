import Testing
@testable import BGTaskDaemon

/// The daemon's start, reload and stop (`DaemonLifecycle`), with stand-ins for the freezer ("setup") and
/// the service ("serving"): every order of start-up, and what a signal does in each phase.
@Suite struct DaemonLifecycleTests {
    typealias Machine = DaemonLifecycle<String, String>

    /// Registers the apps, recording which setup the service was made from.
    private func loadApps(_ m: inout Machine, made: inout [String]) -> Machine.AppsRegisteredAction {
        m.appsLoaded { setup in
            made.append(setup)
            return "service(\(setup))"
        }
    }

    @Test func signalsFirstThenAppsServes() {
        var m = Machine()
        m.setupMade("freezer")
        guard case .announceReady = m.signalsRegistered() else { Issue.record("READY=1 first"); return }
        var made: [String] = []
        guard case .serve(let s, let reload) = loadApps(&m, made: &made) else { Issue.record("serve"); return }
        #expect(s == "service(freezer)" && !reload && made == ["freezer"])
        guard case .reload(let r) = m.reloadRequested() else { Issue.record("running reloads"); return }
        #expect(r == "service(freezer)")
    }

    @Test func appsFirstThenSignalsAnnouncesAndServes() {
        var m = Machine()
        m.setupMade("freezer")
        var made: [String] = []
        guard case .waitForSignals = loadApps(&m, made: &made) else { Issue.record("wait"); return }
        #expect(made == ["freezer"])
        guard case .announceReadyAndServe(let s, let reload) = m.signalsRegistered() else {
            Issue.record("READY=1 and serve"); return
        }
        #expect(s == "service(freezer)" && !reload)
        // Registered once: a second registration is not a second READY=1.
        guard case .none = m.signalsRegistered() else { Issue.record("once"); return }
    }

    @Test func aSIGHUPBeforeTheAppsReloadsOnceServing() {
        for appsFirst in [false, true] {
            var m = Machine()
            m.setupMade("f")
            var made: [String] = []
            guard case .deferred = m.reloadRequested() else { Issue.record("deferred"); return }
            if appsFirst {
                guard case .waitForSignals = loadApps(&m, made: &made) else { Issue.record("wait"); return }
                guard case .announceReadyAndServe(_, let reload) = m.signalsRegistered() else { Issue.record("serve"); return }
                #expect(reload)
            } else {
                _ = m.signalsRegistered()
                guard case .deferred = m.reloadRequested() else { Issue.record("deferred after READY"); return }
                guard case .serve(_, let reload) = loadApps(&m, made: &made) else { Issue.record("serve"); return }
                #expect(reload)
            }
        }
    }

    @Test func aReloadWithTheServiceMadeButNoSignalsYetRunsAtOnce() {
        var m = Machine()
        m.setupMade("f")
        var made: [String] = []
        _ = loadApps(&m, made: &made)
        guard case .reload(let s) = m.reloadRequested() else { Issue.record("reload"); return }
        #expect(s == "service(f)")
        guard case .announceReadyAndServe(_, let reload) = m.signalsRegistered() else { Issue.record("serve"); return }
        #expect(!reload)
    }

    @Test func aStopBeforeTheServiceExistsExitsAtOnce() {
        for signalsFirst in [false, true] {
            var m = Machine()
            m.setupMade("f")
            if signalsFirst { _ = m.signalsRegistered() }
            guard case .exit = m.stopRequested() else { Issue.record("exit"); return }
            #expect(m.isFinished)
            var made: [String] = []
            guard case .discard = loadApps(&m, made: &made) else { Issue.record("discard"); return }
            #expect(made.isEmpty, "no service is made after the stop")
            #expect(m.appsStopped() == nil)
        }
    }

    @Test func aStopWhileServingTerminatesTheAppsThenFinishes() {
        var m = Machine()
        m.setupMade("f")
        _ = m.signalsRegistered()
        var made: [String] = []
        _ = loadApps(&m, made: &made)
        guard case .stopApps(let s) = m.stopRequested() else { Issue.record("stopApps"); return }
        #expect(s == "service(f)")
        #expect(!m.isFinished)
        // A second SIGTERM does not shorten the sequence.
        guard case .ignore = m.stopRequested() else { Issue.record("second signal ignored"); return }
        // A reload during the stop keeps the configuration in force (no RELOADING=1, no READY=1).
        guard case .ignored = m.reloadRequested() else { Issue.record("reload ignored"); return }
        #expect(m.appsStopped() == "service(f)")
        #expect(m.isFinished)
        #expect(m.appsStopped() == nil, "finished once")
        guard case .ignore = m.stopRequested() else { Issue.record("after finish"); return }
        guard case .ignored = m.reloadRequested() else { Issue.record("after finish"); return }
    }

    @Test func aStopWithTheServiceMadeBeforeREADYSendsNoREADY() {
        var m = Machine()
        m.setupMade("f")
        var made: [String] = []
        _ = loadApps(&m, made: &made)
        guard case .stopApps = m.stopRequested() else { Issue.record("stopApps"); return }
        guard case .none = m.signalsRegistered() else { Issue.record("no READY=1 after STOPPING=1"); return }
    }

    @Test func theSetupIsTakenOnce() {
        var m = Machine()
        m.setupMade("first")
        m.setupMade("second")
        _ = m.signalsRegistered()
        var made: [String] = []
        _ = loadApps(&m, made: &made)
        #expect(made == ["first"])
    }
}
