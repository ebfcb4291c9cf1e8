import BGTaskCore
import PropertyBased
import Testing

// Literals known to be valid, so the force unwraps cannot fail.
private let news = AppID("org.example.News")!
private let photos = AppID("org.example.Photos")!

private let refreshID = "org.example.News.refresh"
private let processingIDs = (0..<12).map { "org.example.News.process\($0)" }

private func at(_ seconds: Int64) -> RealtimeInstant { RealtimeInstant(microsecondsSinceEpoch: 1_700_000_000_000_000 + seconds * 1_000_000) }

private let everything = TaskSubmitPermissions(
    permittedIdentifiers: Set([refreshID] + processingIDs), backgroundModes: [.fetch, .processing])

/// Scheduled tasks (SPEC §6): submission rules and limits, and when a request runs.
@Suite struct TaskSchedulerTests {
    // MARK: submission

    @Test func anIdentifierNotPermittedIsRefused() {
        var s = TaskSchedule()
        let r = s.submit(TaskRequest(identifier: "org.example.News.other", kind: .refresh), for: news, permissions: everything)
        #expect(r == .failure(.notPermitted("org.example.News.other")))
        #expect(s.count(for: news) == 0)
    }

    @Test func eachKindNeedsItsMode() {
        var s = TaskSchedule()
        let noFetch = TaskSubmitPermissions(permittedIdentifiers: everything.permittedIdentifiers, backgroundModes: [.processing])
        #expect(s.submit(TaskRequest(identifier: refreshID, kind: .refresh), for: news, permissions: noFetch) == .failure(.modeNotDeclared(.fetch)))
        let noProcessing = TaskSubmitPermissions(permittedIdentifiers: everything.permittedIdentifiers, backgroundModes: [.fetch])
        #expect(
            s.submit(TaskRequest(identifier: processingIDs[0], kind: .processing), for: news, permissions: noProcessing)
                == .failure(.modeNotDeclared(.processing)))
    }

    @Test func refreshUnavailableRefusesWithTheReason() {
        var s = TaskSchedule()
        var p = everything
        p.unavailable = .lowPowerMode
        #expect(s.submit(TaskRequest(identifier: refreshID, kind: .refresh), for: news, permissions: p) == .failure(.unavailable(.lowPowerMode)))
        // Not permitted is reported first, whatever the policy.
        #expect(s.submit(TaskRequest(identifier: "x", kind: .refresh), for: news, permissions: p) == .failure(.notPermitted("x")))
    }

    @Test func resubmittingReplacesThePendingRequest() {
        var s = TaskSchedule()
        let first = TaskRequest(identifier: refreshID, kind: .refresh, earliestBegin: at(100))
        let second = TaskRequest(identifier: refreshID, kind: .refresh, earliestBegin: at(200), requiresNetwork: true)
        #expect(s.submit(first, for: news, permissions: everything) == .success(nil))
        #expect(s.submit(second, for: news, permissions: everything) == .success(first))
        #expect(s.requests(for: news) == [second])
    }

    @Test func oneRefreshRequestPerApp() {
        var s = TaskSchedule()
        let p = TaskSubmitPermissions(permittedIdentifiers: [refreshID, "b"], backgroundModes: [.fetch])
        #expect(s.submit(TaskRequest(identifier: refreshID, kind: .refresh), for: news, permissions: p) == .success(nil))
        #expect(s.submit(TaskRequest(identifier: "b", kind: .refresh), for: news, permissions: p) == .failure(.tooManyPendingTaskRequests(.refresh)))
        // Another app has its own limit.
        #expect(s.submit(TaskRequest(identifier: "b", kind: .refresh), for: photos, permissions: p) == .success(nil))
    }

    @Test func tenProcessingRequestsPerAppAndTheEleventhIsRefused() {
        var s = TaskSchedule()
        for i in 0..<10 {
            #expect(s.submit(TaskRequest(identifier: processingIDs[i], kind: .processing), for: news, permissions: everything) == .success(nil))
        }
        #expect(
            s.submit(TaskRequest(identifier: processingIDs[10], kind: .processing), for: news, permissions: everything)
                == .failure(.tooManyPendingTaskRequests(.processing)))
        // The refresh slot is separate, and replacing one of the ten is not an eleventh.
        #expect(s.submit(TaskRequest(identifier: refreshID, kind: .refresh), for: news, permissions: everything) == .success(nil))
        let replacing = s.submit(
            TaskRequest(identifier: processingIDs[3], kind: .processing, requiresExternalPower: true), for: news,
            permissions: everything)
        #expect(replacing == .success(TaskRequest(identifier: processingIDs[3], kind: .processing)))
        #expect(s.count(for: news) == 11)
        // Cancelling one frees a slot.
        let cancelled = s.cancel(processingIDs[0], for: news)
        #expect(cancelled != nil)
        #expect(s.submit(TaskRequest(identifier: processingIDs[10], kind: .processing), for: news, permissions: everything) == .success(nil))
    }

    @Test func cancellingIsHarmlessAndCancelAllEmpties() {
        var s = TaskSchedule()
        let nothing = s.cancel(refreshID, for: news)
        #expect(nothing == nil)
        s.submit(TaskRequest(identifier: refreshID, kind: .refresh), for: news, permissions: everything)
        s.submit(TaskRequest(identifier: processingIDs[0], kind: .processing), for: news, permissions: everything)
        let two = s.cancelAll(for: news)
        #expect(two == 2)
        #expect(s.apps.isEmpty)
        let zero = s.cancelAll(for: news)
        #expect(zero == 0)
    }

    @Test func restoringKeepsTheLimits() {
        var s = TaskSchedule()
        let first = s.restore(TaskRequest(identifier: "a", kind: .refresh), for: news)
        let second = s.restore(TaskRequest(identifier: "b", kind: .refresh), for: news)
        let replaced = s.restore(TaskRequest(identifier: "a", kind: .refresh, earliestBegin: at(5)), for: news)
        #expect(first && !second && replaced)
        #expect(s.requests(for: news).map(\.earliestBegin) == [at(5)])
    }

    // MARK: when a request runs

    func context(_ now: RealtimeInstant, idleFor: TimeSpan? = .seconds(3600), power: Bool = true, network: NetworkCondition = .unmetered)
        -> TaskSchedulingContext
    {
        TaskSchedulingContext(
            now: now, conditions: RefreshConditions(onExternalPower: power, network: network),
            minimumRefreshInterval: .minutes(15), processingIdle: .seconds(60), idleFor: idleFor)
    }

    @Test func theEarliestBeginIsExact() {
        let r = TaskRequest(identifier: refreshID, kind: .refresh, earliestBegin: at(100))
        let justBefore = RealtimeInstant(microsecondsSinceEpoch: at(100).microsecondsSinceEpoch - 1)
        #expect(TaskSchedule.verdict(for: r, denial: nil, lastRefresh: nil, context: context(justBefore)) == .wait(.earliestBegin(at(100))))
        #expect(TaskSchedule.verdict(for: r, denial: nil, lastRefresh: nil, context: context(at(100))) == .run)
        #expect(TaskSchedule.verdict(for: TaskRequest(identifier: refreshID, kind: .refresh), denial: nil, lastRefresh: nil, context: context(at(0))) == .run)
    }

    @Test func aDueRequestIsDeniedByThePolicyButAFutureOneJustWaits() {
        let r = TaskRequest(identifier: refreshID, kind: .refresh, earliestBegin: at(100))
        #expect(TaskSchedule.verdict(for: r, denial: .refreshDisabled, lastRefresh: nil, context: context(at(100))) == .deny(.refreshDisabled))
        #expect(TaskSchedule.verdict(for: r, denial: .refreshDisabled, lastRefresh: nil, context: context(at(99))) == .wait(.earliestBegin(at(100))))
    }

    @Test func conditionsHold() {
        let needsNet = TaskRequest(identifier: refreshID, kind: .refresh, requiresNetwork: true)
        #expect(TaskSchedule.verdict(for: needsNet, denial: nil, lastRefresh: nil, context: context(at(0), network: .none)) == .wait(.network))
        #expect(TaskSchedule.verdict(for: needsNet, denial: nil, lastRefresh: nil, context: context(at(0), network: .metered)) == .run)
        let needsPower = TaskRequest(identifier: processingIDs[0], kind: .processing, requiresExternalPower: true)
        #expect(TaskSchedule.verdict(for: needsPower, denial: nil, lastRefresh: nil, context: context(at(0), power: false)) == .wait(.externalPower))
        #expect(TaskSchedule.verdict(for: needsPower, denial: nil, lastRefresh: nil, context: context(at(0), power: true)) == .run)
        // No condition asked: none matters.
        let plain = TaskRequest(identifier: refreshID, kind: .refresh)
        #expect(TaskSchedule.verdict(for: plain, denial: nil, lastRefresh: nil, context: context(at(0), power: false, network: .none)) == .run)
    }

    @Test func theMinimumRefreshIntervalIsExact() {
        let r = TaskRequest(identifier: refreshID, kind: .refresh)
        let last = at(1000)
        let allowed = at(1000 + 15 * 60)
        let justBefore = RealtimeInstant(microsecondsSinceEpoch: allowed.microsecondsSinceEpoch - 1)
        #expect(TaskSchedule.verdict(for: r, denial: nil, lastRefresh: last, context: context(justBefore)) == .wait(.minimumInterval(allowed)))
        #expect(TaskSchedule.verdict(for: r, denial: nil, lastRefresh: last, context: context(allowed)) == .run)
        // A last refresh in the future (the wall clock went back) does not block forever.
        #expect(TaskSchedule.verdict(for: r, denial: nil, lastRefresh: at(5000), context: context(at(10))) == .run)
        // Processing tasks are not refreshes.
        let p = TaskRequest(identifier: processingIDs[0], kind: .processing)
        #expect(TaskSchedule.verdict(for: p, denial: nil, lastRefresh: last, context: context(justBefore)) == .run)
    }

    @Test func processingWaitsForTheIdlePeriod() {
        let p = TaskRequest(identifier: processingIDs[0], kind: .processing)
        #expect(TaskSchedule.verdict(for: p, denial: nil, lastRefresh: nil, context: context(at(0), idleFor: nil)) == .wait(.idle(nil)))
        let almost = TaskSpanHelper.seconds(60) - .microseconds(1)
        #expect(
            TaskSchedule.verdict(for: p, denial: nil, lastRefresh: nil, context: context(at(0), idleFor: almost))
                == .wait(.idle(RealtimeInstant(microsecondsSinceEpoch: at(0).microsecondsSinceEpoch + 1))))
        #expect(TaskSchedule.verdict(for: p, denial: nil, lastRefresh: nil, context: context(at(0), idleFor: .seconds(60))) == .run)
        // A refresh task does not care about foreground apps.
        let r = TaskRequest(identifier: refreshID, kind: .refresh)
        #expect(TaskSchedule.verdict(for: r, denial: nil, lastRefresh: nil, context: context(at(0), idleFor: nil)) == .run)
    }

    @Test func thePlanRunsDueRequestsDeniesBlockedOnesAndWakesForTheEarliestDate() {
        var s = TaskSchedule()
        s.submit(TaskRequest(identifier: refreshID, kind: .refresh, earliestBegin: at(50)), for: news, permissions: everything)
        s.submit(TaskRequest(identifier: processingIDs[0], kind: .processing), for: news, permissions: everything)
        s.submit(TaskRequest(identifier: processingIDs[1], kind: .processing, earliestBegin: at(30)), for: news, permissions: everything)
        s.submit(TaskRequest(identifier: refreshID, kind: .refresh), for: photos, permissions: everything)
        let plan = s.plan(context: context(at(10))) { $0 == photos ? .refreshDisabled : nil }
        #expect(plan.runs == [PlannedTask(app: news, request: TaskRequest(identifier: processingIDs[0], kind: .processing))])
        #expect(plan.denials.map(\.task.app) == [photos])
        #expect(plan.denials.map(\.reason) == [.refreshDisabled])
        #expect(plan.nextWake == at(30))
        #expect(!plan.waitsForIdle)
        let busy = s.plan(context: context(at(10), idleFor: nil)) { _ in nil }
        #expect(busy.waitsForIdle)
        #expect(busy.runs.map(\.app) == [photos])
    }

    @Test func startingARequestRemovesItAndARefreshBecomesTheLastRefresh() {
        var s = TaskSchedule()
        s.submit(TaskRequest(identifier: refreshID, kind: .refresh), for: news, permissions: everything)
        s.submit(TaskRequest(identifier: processingIDs[0], kind: .processing), for: news, permissions: everything)
        s.started(processingIDs[0], for: news, at: at(5))
        #expect(s.lastRefresh[news] == nil)
        s.started(refreshID, for: news, at: at(7))
        #expect(s.lastRefresh[news] == at(7))
        #expect(s.count(for: news) == 0)
        // The next refresh waits the minimum interval from then.
        s.submit(TaskRequest(identifier: refreshID, kind: .refresh), for: news, permissions: everything)
        #expect(s.plan(context: context(at(8))) { _ in nil }.nextWake == at(7 + 15 * 60))
    }

    /// Whatever the inputs, a plan never runs a request before its date, never runs a denied app's
    /// request, and its wake-up is always in the future.
    @Test func planInvariants() async {
        await propertyCheck(input: Gen.int(in: 0...10_000), Gen.int(in: 0...2_000), Gen.bool, Gen.bool) { now, begin, denied, idle in
            var s = TaskSchedule()
            s.submit(
                TaskRequest(identifier: refreshID, kind: .refresh, earliestBegin: at(Int64(begin))), for: news,
                permissions: everything)
            s.submit(
                TaskRequest(identifier: processingIDs[0], kind: .processing, earliestBegin: at(Int64(begin))), for: news,
                permissions: everything)
            s.setLastRefresh(at(Int64(begin) / 2), for: news)
            let ctx = context(at(Int64(now)), idleFor: idle ? .seconds(Int64(now % 120)) : nil)
            let plan = s.plan(context: ctx) { _ in denied ? .lowPowerMode : nil }
            for run in plan.runs {
                #expect(run.request.earliestBegin.map { $0 <= ctx.now } ?? true)
                #expect(!denied)
            }
            if let wake = plan.nextWake { #expect(wake > ctx.now) }
            #expect(plan.runs.count + plan.denials.count <= 2)
        }
    }
}

private enum TaskSpanHelper {
    static func seconds(_ s: Int64) -> TimeSpan { .seconds(s) }
}
