import BGTaskCore
import Testing

// Literals known to be valid, so the force unwraps cannot fail.
private let news = AppID("org.example.News")!
private let refreshID = "org.example.News.refresh"
private let processID = "org.example.News.process"

/// SPEC §6: a request that falls due while the app is in the foreground waits until it has entered the
/// background, and stays pending (and saved) until its task really starts: an app that ends first (user
/// `Terminate`, crash, exit) or a daemon restart does not lose it.
@Suite struct WaitingTaskTests {
    private static let config = RefreshConfig(
        minimumRefreshInterval: .minutes(15), processingIdle: .zero,
        apps: [news: RefreshConfig.App(permittedIdentifiers: [refreshID, processID], backgroundModes: [.fetch, .processing])])

    private struct Refresh {
        var machine = RefreshMachine(config: WaitingTaskTests.config)
        var wall = RealtimeInstant(microsecondsSinceEpoch: 1_700_000_000_000_000)
        var monotonic = Instant(microseconds: 1_000_000_000)
        var facts: [AppID: RefreshAppFacts] = [:]

        init() {
            _ = handle(.stateLoaded(RefreshState()))
            _ = handle(.started(detectedPower: nil))
        }

        mutating func advance() {
            wall = wall + .seconds(1)
            monotonic = monotonic + .seconds(1)
        }

        mutating func handle(_ input: RefreshInput) -> [RefreshAction] {
            let f = facts
            return machine.handle(input, now: RefreshNow(wall: wall, monotonic: monotonic), facts: { f[$0] })
        }
    }

    private func runs(_ actions: [RefreshAction]) -> [String] {
        actions.compactMap { if case .run(let r) = $0 { return r.identifier } else { return nil } }
    }

    private func saves(_ actions: [RefreshAction]) -> [RefreshState] {
        actions.compactMap { if case .save(let s, _) = $0 { return s } else { return nil } }
    }

    @Test func aDueRequestHandedToAForegroundAppStaysPendingAndRunsAgainAfterTheAppEnds() {
        var h = Refresh()
        h.facts[news] = RefreshAppFacts(state: .active)
        let submitted = h.handle(.taskSubmitted(news, TaskRequest(identifier: refreshID, kind: .refresh)))
        // Handed to the lifecycle core (which makes it wait for the background), but still pending and saved.
        #expect(runs(submitted) == [refreshID])
        #expect(h.machine.requests(for: news).map(\.identifier) == [refreshID])
        #expect(saves(submitted).last?.schedule.count(for: news) == 1)
        // While the core holds it waiting, no second hand-off, and decisions that keep the app in the
        // foreground ask for no look again.
        h.facts[news] = RefreshAppFacts(state: .active, waitingTasks: [refreshID])
        #expect(h.handle(.appStateObserved(news, .inactive)) == [])
        #expect(runs(h.handle(.wallDeadlineReached)).isEmpty)
        // The user terminates the app before it enters the background: the request is still there, and runs
        // (a launch into the background) as soon as it may.
        h.facts[news] = RefreshAppFacts(state: .notRunning)
        #expect(h.handle(.appStateObserved(news, .notRunning)) == [.reviewSoon])
        let again = h.handle(.reviewRequested)
        #expect(runs(again) == [refreshID])
        #expect(h.machine.pendingCount(for: news) == 0)
        #expect(saves(again).last?.schedule.count(for: news) == 0)
    }

    @Test func runNowForAForegroundAppKeepsTheRequestPending() {
        var h = Refresh()
        let later = h.wall + .minutes(60)
        _ = h.handle(.taskSubmitted(news, TaskRequest(identifier: processID, kind: .processing, earliestBegin: later)))
        h.facts[news] = RefreshAppFacts(state: .inactive)
        let now = h.handle(.runNowRequested(news, identifier: processID))
        #expect(now == [.run(RefreshRun(app: news, identifier: processID, kind: .processing, reason: .userRequest, answersCall: true))])
        #expect(h.machine.requests(for: news).map(\.identifier) == [processID])
        // The app crashes: not due by itself (its date is an hour away), so it stays pending until then.
        h.facts[news] = RefreshAppFacts(state: .notRunning)
        _ = h.handle(.appStateObserved(news, .notRunning))
        #expect(runs(h.handle(.reviewRequested)).isEmpty)
        #expect(h.machine.requests(for: news).map(\.identifier) == [processID])
        // Nothing waits for the app's background any more: its later decisions ask for no look again.
        #expect(h.handle(.appStateObserved(news, .suspended)) == [])
    }

    @Test func theRequestLeavesThePendingListWhenTheCoreStartsItNotBefore() {
        var h = Refresh()
        h.facts[news] = RefreshAppFacts(state: .active)
        _ = h.handle(.taskSubmitted(news, TaskRequest(identifier: refreshID, kind: .refresh)))
        h.facts[news] = RefreshAppFacts(state: .active, waitingTasks: [refreshID])
        // The app enters the background and the core starts the task: now it leaves, and the file says so.
        h.advance()
        let started = h.handle(.taskStarted(news, identifier: refreshID))
        #expect(h.machine.pendingCount(for: news) == 0)
        #expect(saves(started).count == 1 && saves(started).first?.schedule.count(for: news) == 0)
        // The refresh counts from its real start (the minimum interval).
        #expect(h.machine.state.schedule.lastRefresh[news] == h.wall)
        // A start the machine did not wait for (the request left at the hand-off) changes nothing: a
        // request submitted again meanwhile stays.
        h.facts[news] = RefreshAppFacts(state: .background, runningTasks: [refreshID])
        _ = h.handle(.taskSubmitted(news, TaskRequest(identifier: refreshID, kind: .refresh)))
        #expect(h.handle(.taskStarted(news, identifier: refreshID)) == [])
        #expect(h.machine.pendingCount(for: news) == 1)
    }

    @Test func theCoreSaysWhichTasksWaitAndWhenOneStarts() {
        var h = Harness()
        h.launchActive(music)
        let due = h.send(.taskRunRequested(music, identifier: "r", kind: .refresh, reason: .taskScheduled))
        #expect(!due.contains { if case .taskStarted = $0 { true } else { false } })
        #expect(h.snapshot(music)?.waitingTasks == ["r"])
        let background = h.after(.seconds(1), .backgroundRequested(music))
        #expect(background.contains(.taskStarted(music, identifier: "r")))
        #expect(h.snapshot(music)?.waitingTasks == [])
        // A task started in the background at once says so too.
        h.send(.taskCompleted(music, identifier: "r", success: true))
        let now = h.send(.taskRunRequested(music, identifier: "p", kind: .processing, reason: .userRequest))
        #expect(now.contains(.taskStarted(music, identifier: "p")))
    }

    @Test func aTerminationDropsTheWaitingTaskWithoutStartingIt() {
        var h = Harness()
        h.launchActive(music)
        h.send(.taskRunRequested(music, identifier: "r", kind: .refresh, reason: .userRequest))
        let ended = h.after(.seconds(1), .terminateRequested(music)) + h.send(.processExited(music, pid: 100))
        #expect(!ended.contains { if case .taskStarted = $0 { true } else { false } })
        #expect(ended.events.allSatisfy { $0.kind != .performTask })
        #expect(h.state(music) == .notRunning && h.snapshot(music)?.waitingTasks == [])
    }

    @Test func aCancelledRequestThatWaitsIsCancelledInTheCoreToo() {
        var h = Refresh()
        h.facts[news] = RefreshAppFacts(state: .active)
        _ = h.handle(.taskSubmitted(news, TaskRequest(identifier: refreshID, kind: .refresh)))
        h.facts[news] = RefreshAppFacts(state: .active, waitingTasks: [refreshID])
        let cancelled = h.handle(.taskCancelled(news, identifier: refreshID))
        #expect(cancelled.first == .cancelWaiting(news, identifier: refreshID))
        #expect(h.machine.pendingCount(for: news) == 0)
        // A request that does not wait in the core is cancelled in the machine only.
        _ = h.handle(.taskSubmitted(news, TaskRequest(identifier: processID, kind: .processing, earliestBegin: h.wall + .minutes(5))))
        #expect(!h.handle(.allTasksCancelled(news)).contains { if case .cancelWaiting = $0 { true } else { false } })

        var core = Harness()
        core.launchActive(music)
        core.send(.taskRunRequested(music, identifier: "r", kind: .refresh, reason: .taskScheduled))
        #expect(core.send(.waitingTaskCancelled(music, identifier: "r")).isEmpty)
        #expect(core.snapshot(music)?.waitingTasks == [])
        let background = core.after(.seconds(1), .backgroundRequested(music))
        #expect(background.sequence.map(\.kind) == [.willResignActive, .didEnterBackground])
    }
}
