import BGTaskCore
import Testing

// Literals known to be valid, so the force unwraps cannot fail.
private let news = AppID("org.example.News")!
private let photos = AppID("org.example.Photos")!
private let refreshID = "org.example.News.refresh"

/// A ``RefreshMachine`` with SPEC §16's policy, both clocks stepped by hand, the core's facts set by hand.
private struct EnergyHarness {
    var machine: RefreshMachine
    var wall = RealtimeInstant(microsecondsSinceEpoch: 1_800_000_000_000_000)  // a multiple of 5 min
    var monotonic = Instant(microseconds: 1_000_000_000)
    var facts: [AppID: RefreshAppFacts] = [news: RefreshAppFacts(state: .notRunning)]

    init(energy: EnergyPolicyConfig = EnergyPolicyConfig()) {
        let config = RefreshConfig(
            apps: [
                news: RefreshConfig.App(permittedIdentifiers: [refreshID], backgroundModes: [.fetch, .remoteNotification]),
                photos: RefreshConfig.App(backgroundModes: [.remoteNotification], restricted: true),
            ], energy: energy)
        machine = RefreshMachine(config: config)
        _ = handle(.stateLoaded(RefreshState()))
        _ = handle(.started(detectedPower: false))
    }

    mutating func handle(_ input: RefreshInput) -> [RefreshAction] {
        let f = facts
        return machine.handle(input, now: RefreshNow(wall: wall, monotonic: monotonic), facts: { f[$0] })
    }

    mutating func advance(_ span: TimeSpan) {
        wall = wall + span
        monotonic = monotonic + span
    }

    /// Submits the refresh request, due at once.
    mutating func submit() -> [RefreshAction] {
        handle(.taskSubmitted(news, TaskRequest(identifier: refreshID, kind: .refresh)))
    }
}

private func runs(_ actions: [RefreshAction]) -> [String] {
    actions.compactMap { if case .run(let r) = $0 { return r.identifier } else { return nil } }
}

private func denials(_ actions: [RefreshAction]) -> [Reason] {
    actions.compactMap { if case .record(let n) = $0, n.kind == .deny { return n.reason } else { return nil } }
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

@Suite struct RefreshEnergyTests {
    @Test func anAppClosedByTheUserIsNotWokenUntilTheUserLaunchesIt() {
        var h = EnergyHarness(energy: .unlimited)
        _ = h.handle(.closedByUser(news))
        #expect(h.machine.isClosedByUser(news))
        let wake = h.handle(.remoteNotificationRequested(news))
        #expect(denials(wake) == [.closedByUser] && replies(wake) == [.failure(.unavailable("closed-by-user"))])
        let submitted = h.submit()
        #expect(runs(submitted).isEmpty && denials(submitted) == [.closedByUser])
        #expect(h.machine.pendingCount(for: news) == 1, "its request stays pending")
        // Journaled once, not at every look.
        h.advance(.minutes(20))
        #expect(denials(h.handle(.wallDeadlineReached)).isEmpty)
        // The user launches it: the due task is handed over (held by the core until the app's background).
        h.facts[news] = RefreshAppFacts(state: .active)
        let used = h.handle(.usedByUser(news))
        #expect(!h.machine.isClosedByUser(news) && runs(used) == [refreshID])
        #expect(h.handle(.remoteNotificationRequested(news)) == [.wake(news)])
    }

    @Test func remoteWakesPastTheHourlyRateAreRefused() {
        var h = EnergyHarness(energy: EnergyPolicyConfig(quotas: [:], remoteWakesPerHour: 3))
        for _ in 0..<3 { #expect(h.handle(.remoteNotificationRequested(news)) == [.wake(news)]) }
        let fourth = h.handle(.remoteNotificationRequested(news))
        #expect(denials(fourth) == [.wakeRate] && replies(fourth) == [.failure(.unavailable("wake-rate"))])
        // One token comes back every 20 min.
        h.advance(.minutes(20) - .microseconds(1))
        #expect(denials(h.handle(.remoteNotificationRequested(news))) == [.wakeRate])
        h.advance(.microseconds(1))
        #expect(h.handle(.remoteNotificationRequested(news)) == [.wake(news)])
        #expect(denials(h.handle(.remoteNotificationRequested(news))) == [.wakeRate])
    }

    @Test func inTheRareBucketTheThirdDueTaskOfADayWaitsAndRunsOnExternalPower() {
        var h = EnergyHarness()
        #expect(h.machine.bucket(for: news, now: h.wall) == .rare, "never used")
        #expect(runs(h.submit()) == [refreshID])
        h.advance(.minutes(15))
        #expect(runs(h.submit()) == [refreshID])
        h.advance(.minutes(15))
        let third = h.submit()
        #expect(runs(third).isEmpty && denials(third) == [.bucketQuota])
        #expect(h.machine.pendingCount(for: news) == 1, "it waits, its request pending")
        // The quota frees when the first wake leaves the 24 h window (on a slot boundary).
        let frees: RealtimeInstant = h.wall + TimeSpan.minutes(24 * 60 - 30)
        #expect(wallTimers(third) == [frees])
        let wake = h.handle(.remoteNotificationRequested(news))
        #expect(denials(wake) == [.bucketQuota] && replies(wake) == [.failure(.unavailable("bucket-quota"))])
        // On external power the quotas do not apply.
        #expect(runs(h.handle(.powerDetected(true))) == [refreshID])
        #expect(h.machine.pendingCount(for: news) == 0)
    }

    @Test func anAppRunningInTheBackgroundCostsNoWake() {
        var h = EnergyHarness()
        h.facts[news] = RefreshAppFacts(state: .background)
        for _ in 0..<4 {
            #expect(runs(h.submit()) == [refreshID])
            h.advance(.minutes(15))
        }
    }

    @Test func bucketsFollowTheLastUse() {
        var h = EnergyHarness()
        #expect(h.machine.bucket(for: photos, now: h.wall) == .restricted)
        _ = h.handle(.appStateObserved(news, .active))
        #expect(h.machine.bucket(for: news, now: h.wall) == .active)
        h.advance(.minutes(600))
        #expect(h.machine.bucket(for: news, now: h.wall) == .active, "in the foreground now")
        _ = h.handle(.appStateObserved(news, .background))
        h.advance(.minutes(60) - .microseconds(1))
        #expect(h.machine.bucket(for: news, now: h.wall) == .active)
        h.advance(.microseconds(1))
        #expect(h.machine.bucket(for: news, now: h.wall) == .workingSet)
        h.advance(.minutes(23 * 60))
        #expect(h.machine.bucket(for: news, now: h.wall) == .frequent)
        h.advance(.minutes(6 * 24 * 60))
        #expect(h.machine.bucket(for: news, now: h.wall) == .rare)
        #expect(StandbyBucket.allCases.map(\.rawValue) == ["active", "working-set", "frequent", "rare", "restricted"])
    }

    @Test func theWallTimerIsArmedOnSlotBoundaries() {
        var h = EnergyHarness()
        h.facts[news] = RefreshAppFacts(state: .background)
        let begin = h.wall + .seconds(61)
        let submitted = h.handle(.taskSubmitted(news, TaskRequest(identifier: refreshID, kind: .refresh, earliestBegin: begin)))
        #expect(wallTimers(submitted) == [h.wall + .minutes(5)])
        h.advance(.minutes(5))
        #expect(runs(h.handle(.wallDeadlineReached)) == [refreshID])
        var unaligned = EnergyHarness(energy: .unlimited)
        unaligned.facts[news] = RefreshAppFacts(state: .background)
        let plain = unaligned.handle(.taskSubmitted(news, TaskRequest(identifier: refreshID, kind: .refresh, earliestBegin: begin)))
        #expect(wallTimers(plain) == [begin])
    }
}
