import BGTaskCore
import Testing

// Literals known to be valid, so the force unwraps cannot fail.
private let news = AppID("org.example.News")!
private let photos = AppID("org.example.Photos")!
private let refreshID = "org.example.News.refresh"
private let processID = "org.example.News.process"

/// Drives a ``RefreshMachine`` with both clocks stepped by hand and the lifecycle core's facts set by hand.
private struct RefreshHarness {
    var machine: RefreshMachine
    var wall = RealtimeInstant(microsecondsSinceEpoch: 1_700_000_000_000_000)
    var monotonic = Instant(microseconds: 1_000_000_000)
    var facts: [AppID: RefreshAppFacts] = [:]

    static let config = RefreshConfig(
        minimumRefreshInterval: .minutes(15), processingIdle: .seconds(60),
        apps: [
            news: RefreshConfig.App(
                permittedIdentifiers: [refreshID, processID], backgroundModes: [.fetch, .processing, .remoteNotification]),
            photos: RefreshConfig.App(permittedIdentifiers: ["org.example.Photos.refresh"], backgroundModes: [.fetch], restricted: true),
        ])

    init(config: RefreshConfig = RefreshHarness.config, state: RefreshState = RefreshState()) {
        machine = RefreshMachine(config: config)
        _ = handle(.stateLoaded(state))
        _ = handle(.started(detectedPower: nil))
    }

    mutating func handle(_ input: RefreshInput) -> [RefreshAction] {
        let f = facts
        return machine.handle(input, now: RefreshNow(wall: wall, monotonic: monotonic), facts: { f[$0] })
    }

    /// Both clocks move on together.
    mutating func advance(_ span: TimeSpan) {
        wall = wall + span
        monotonic = monotonic + span
    }
}

private func runs(_ actions: [RefreshAction]) -> [RefreshRun] {
    actions.compactMap { if case .run(let r) = $0 { return r } else { return nil } }
}

private func notices(_ actions: [RefreshAction]) -> [RefreshNotice] {
    actions.compactMap { if case .record(let n) = $0 { return n } else { return nil } }
}

private func replies(_ actions: [RefreshAction]) -> [RefreshReply] {
    actions.compactMap {
        switch $0 {
        case .reply(let r): return r
        case .save(_, let r?): return r
        default: return nil
        }
    }
}

private func wallTimers(_ actions: [RefreshAction]) -> [RealtimeInstant?] {
    actions.compactMap { if case .armWallTimer(let t) = $0 { return .some(t) } else { return nil } }
}

/// Scheduled tasks and the refresh policy as a pure machine (SPEC §5, §6): every input's actions, the wall
/// clock stepped by hand.
@Suite struct RefreshMachineTests {
    @Test func aDatedRequestArmsTheWallTimerAndRunsExactlyAtItsDate() {
        var h = RefreshHarness()
        h.facts[news] = RefreshAppFacts(state: .suspended)
        let begin = h.wall + .seconds(30)
        let submitted = h.handle(.taskSubmitted(news, TaskRequest(identifier: refreshID, kind: .refresh, earliestBegin: begin)))
        #expect(replies(submitted) == [.ok])
        #expect(wallTimers(submitted) == [begin])
        #expect(runs(submitted).isEmpty)

        // An early wake-up is harmless: nothing runs at 29.999 s, the timer is left where it is.
        h.advance(.seconds(30) - .microseconds(1))
        let early = h.handle(.wallDeadlineReached)
        #expect(runs(early).isEmpty)
        #expect(wallTimers(early) == [begin])

        h.advance(.microseconds(1))
        let due = h.handle(.wallDeadlineReached)
        #expect(runs(due) == [RefreshRun(app: news, identifier: refreshID, kind: .refresh, reason: .taskScheduled)])
        #expect(due.contains { if case .save(let s, nil) = $0 { return s.schedule.count(for: news) == 0 } else { return false } })
        // The timer that fired is spent: nothing to re-arm.
        #expect(wallTimers(due).isEmpty)
        #expect(h.machine.nextWallDeadline == nil)
        #expect(h.machine.pendingCount(for: news) == 0)
    }

    @Test func theMinimumIntervalAfterARefreshIsAWallDeadline() {
        var h = RefreshHarness()
        h.facts[news] = RefreshAppFacts(state: .suspended)
        #expect(runs(h.handle(.taskSubmitted(news, TaskRequest(identifier: refreshID, kind: .refresh)))).count == 1)
        let last = h.wall
        h.advance(.seconds(1))
        let again = h.handle(.taskSubmitted(news, TaskRequest(identifier: refreshID, kind: .refresh)))
        #expect(runs(again).isEmpty)
        #expect(wallTimers(again) == [last + .minutes(15)])
    }

    @Test func aDueRequestDeniedByThePolicyIsJournaledOnceAndRunsWhenAllowed() {
        var h = RefreshHarness()
        h.facts[news] = RefreshAppFacts(state: .suspended)
        let begin = h.wall + .seconds(10)
        _ = h.handle(.taskSubmitted(news, TaskRequest(identifier: refreshID, kind: .refresh, earliestBegin: begin)))
        let lowPower = h.handle(.lowPowerModeRequested(true))
        #expect(notices(lowPower).map(\.subject) == [.lowPowerModeSet(true)])
        #expect(replies(lowPower) == [.ok])

        h.advance(.seconds(10))
        let due = h.handle(.wallDeadlineReached)
        #expect(runs(due).isEmpty)
        #expect(notices(due) == [
            RefreshNotice(
                kind: .deny, reason: .lowPowerMode, app: news, state: .suspended,
                subject: .taskNotRun(.refresh, identifier: refreshID), byCall: false),
        ])
        // Looked at again (a later wake-up): the same denial is not journaled twice.
        #expect(notices(h.handle(.wallDeadlineReached)).isEmpty)

        let off = h.handle(.lowPowerModeRequested(false))
        #expect(runs(off).map(\.identifier) == [refreshID])
    }

    @Test func submissionsAreCheckedAndRefusalsJournaledWithTheirReason() {
        var h = RefreshHarness()
        let notPermitted = h.handle(.taskSubmitted(news, TaskRequest(identifier: "other", kind: .refresh)))
        #expect(notPermitted == [.reply(.failure(.notPermitted("other")))])

        let restricted = h.handle(.taskSubmitted(photos, TaskRequest(identifier: "org.example.Photos.refresh", kind: .refresh)))
        #expect(replies(restricted) == [.failure(.unavailable("restricted"))])
        #expect(notices(restricted).map(\.reason) == [.restricted])
        #expect(notices(restricted).first?.byCall == true)

        var noProcessing = RefreshHarness.config
        noProcessing.apps[news]?.backgroundModes = [.fetch]
        var g = RefreshHarness(config: noProcessing)
        let mode = g.handle(.taskSubmitted(news, TaskRequest(identifier: processID, kind: .processing)))
        #expect(replies(mode) == [.failure(.modeNotDeclared(.processing))])
        #expect(notices(mode).map(\.subject) == [.submissionRefused(.processing, identifier: processID, mode: .processing)])

        let unknown = AppID("org.example.Unknown")!
        #expect(h.handle(.taskSubmitted(unknown, TaskRequest(identifier: "x", kind: .refresh))) == [.reply(.failure(.noSuchApp(unknown)))])
    }

    @Test func processingWaitsForNoForegroundAppForTheIdleTime() {
        var h = RefreshHarness()
        h.facts[news] = RefreshAppFacts(state: .suspended)
        #expect(h.handle(.appStateObserved(photos, .active)) == [])
        let submitted = h.handle(.taskSubmitted(news, TaskRequest(identifier: processID, kind: .processing)))
        #expect(runs(submitted).isEmpty)
        // It waits on the apps' states: a change asks for one look again (not one per decision).
        #expect(h.handle(.appStateObserved(photos, .background)) == [.reviewSoon])
        #expect(h.handle(.appStateObserved(photos, .suspended)) == [])
        let look = h.handle(.reviewRequested)
        #expect(runs(look).isEmpty)
        #expect(wallTimers(look) == [h.wall + .seconds(60)])
        h.advance(.seconds(60))
        #expect(runs(h.handle(.wallDeadlineReached)).map(\.identifier) == [processID])
    }

    @Test func aDueRequestWaitsWhileTheAppIsTerminatingOrRunsIt() {
        var h = RefreshHarness()
        h.facts[news] = RefreshAppFacts(state: .background, terminating: true)
        let submitted = h.handle(.taskSubmitted(news, TaskRequest(identifier: refreshID, kind: .refresh)))
        #expect(runs(submitted).isEmpty)
        #expect(h.machine.pendingCount(for: news) == 1)
        #expect(h.handle(.appStateObserved(news, .notRunning)) == [.reviewSoon])
        h.facts[news] = RefreshAppFacts(state: .notRunning)
        #expect(runs(h.handle(.reviewRequested)).map(\.identifier) == [refreshID])
    }

    @Test func runNowAnswersOnceSavedAndKeepsTheRequestIfTheAppCannotTakeIt() {
        var h = RefreshHarness()
        let later = h.wall + .minutes(60)
        _ = h.handle(.taskSubmitted(news, TaskRequest(identifier: processID, kind: .processing, earliestBegin: later)))
        #expect(h.handle(.runNowRequested(news, identifier: "nope")) == [.reply(.failure(.notPermitted("nope")))])
        #expect(h.handle(.runNowRequested(news, identifier: refreshID)) == [.reply(.failure(.unavailable("no-pending-request")))])

        // Not checked in: the lifecycle core answers (and refuses); the request stays.
        h.facts[news] = RefreshAppFacts(state: .notRunning, lifecycleAware: false)
        let refused = h.handle(.runNowRequested(news, identifier: processID))
        #expect(refused == [.run(RefreshRun(app: news, identifier: processID, kind: .processing, reason: .userRequest, answersCall: true))])
        #expect(h.machine.pendingCount(for: news) == 1)

        h.facts[news] = RefreshAppFacts(state: .suspended)
        let taken = runs(h.handle(.runNowRequested(news, identifier: processID)))
        #expect(taken.count == 1)
        #expect(taken.first?.answersCall == true)
        #expect(taken.first?.saveBeforeReply == true && h.machine.state.schedule.count(for: news) == 0)
        #expect(h.machine.pendingCount(for: news) == 0)
    }

    @Test func wakesOnlyWithTheModeDeclaredAndAsThePolicyAllows() {
        var h = RefreshHarness()
        #expect(h.handle(.remoteNotificationRequested(news)) == [.wake(news)])
        let photosWake = h.handle(.remoteNotificationRequested(photos))
        #expect(replies(photosWake) == [.failure(.modeNotDeclared(.remoteNotification))])
        #expect(notices(photosWake).map(\.subject) == [.wakeRefused])
        _ = h.handle(.appSettingRequested(news, enabled: false))
        let off = h.handle(.remoteNotificationRequested(news))
        #expect(replies(off) == [.failure(.unavailable("refresh-disabled"))])
        #expect(notices(off).map(\.reason) == [.refreshDisabled])
    }

    @Test func statusChangesAreAnnouncedToRunningCheckedInAppsOnly() {
        var h = RefreshHarness()
        h.facts[news] = RefreshAppFacts(state: .background)
        let off = h.handle(.globalModeRequested(.off))
        #expect(off.contains(.announceStatus(news, status: .denied, previous: .available)))
        // Photos is restricted throughout: nothing to announce.
        #expect(!off.contains { if case .announceStatus(photos, _, _) = $0 { return true } else { return false } })
        h.facts[news] = RefreshAppFacts(state: .notRunning)
        let on = h.handle(.globalModeRequested(.on))
        #expect(!on.contains { if case .announceStatus = $0 { return true } else { return false } })
        #expect(h.machine.status(for: news) == .available)
    }

    @Test func aRestrictedAppCannotBeTurnedOnByACall() {
        var h = RefreshHarness()
        let actions = h.handle(.appSettingRequested(photos, enabled: true))
        #expect(replies(actions) == [.failure(.unavailable("restricted"))])
        #expect(notices(actions).map(\.subject) == [.appSettingRefused])
        #expect(!actions.contains { if case .save = $0 { return true } else { return false } })
    }

    @Test func requiredConditionsWaitForTheirChangeNotATimer() {
        var h = RefreshHarness()
        h.facts[news] = RefreshAppFacts(state: .suspended)
        _ = h.handle(.powerDetected(false))
        let submitted = h.handle(.taskSubmitted(news, TaskRequest(identifier: refreshID, kind: .refresh, requiresExternalPower: true)))
        #expect(runs(submitted).isEmpty)
        #expect(h.machine.nextWallDeadline == nil)
        #expect(h.handle(.powerDetected(false)) == [])
        #expect(runs(h.handle(.powerDetected(true))).map(\.identifier) == [refreshID])
    }

    @Test func aLoadedStateIsInForceAndAnAppWhoseManifestWentKeepsItsRequests() {
        var saved = RefreshState()
        saved.lowPowerMode = true
        saved.onExternalPower = false
        saved.schedule.restore(TaskRequest(identifier: refreshID, kind: .refresh), for: news)
        var h = RefreshHarness(state: saved)
        #expect(h.machine.status(for: news) == .denied)
        #expect(h.machine.onExternalPower == false)
        var gone = RefreshHarness.config
        gone.apps[news] = nil
        h.facts[news] = RefreshAppFacts(state: .suspended)
        _ = h.handle(.configurationChanged(gone))
        let on = h.handle(.lowPowerModeRequested(false))
        #expect(runs(on).isEmpty)
        #expect(h.machine.pendingCount(for: news) == 1)
        #expect(runs(h.handle(.configurationChanged(RefreshHarness.config))).map(\.identifier) == [refreshID])
    }
}
