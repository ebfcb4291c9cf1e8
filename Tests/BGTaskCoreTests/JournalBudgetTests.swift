import BGTaskCore
import Testing

/// SPEC §11's journal budget, with time stepped by hand.
@Suite struct JournalBudgetTests {
    private static func at(_ ms: Int64) -> Instant { Instant(microseconds: ms * 1_000) }

    private func admitMany(_ budget: inout JournalBudget, _ kind: DecisionKind, _ app: AppID?, _ n: Int, at ms: Int64)
        -> (journaled: Int, coalesced: Int, summaries: [JournalBudget.Summary])
    {
        var journaled = 0, coalesced = 0
        var summaries: [JournalBudget.Summary] = []
        for _ in 0..<n {
            let (verdict, s) = budget.admit(kind, app: app, now: Self.at(ms))
            summaries += s
            if verdict == .journal { journaled += 1 } else { coalesced += 1 }
        }
        return (journaled, coalesced, summaries)
    }

    @Test func stateChangesAndDenialsAreAlwaysJournaled() {
        var budget = JournalBudget(limits: .init(perAppBurst: 0, globalBurst: 0, interval: .seconds(30)))
        for kind in DecisionKind.allCases where kind != .grant && kind != .end {
            for _ in 0..<10_000 {
                #expect(budget.admit(kind, app: mail, now: .zero).verdict == .journal)
            }
        }
        #expect(budget.nextDeadline == nil)
        let always = DecisionKind.allCases.filter(JournalBudget.isAlwaysJournaled).map(\.rawValue)
        #expect(always == [
            "launch", "foreground", "background", "suspend", "resume", "terminate", "deny", "expire", "run-task",
            "complete-task", "policy", "coalesced",
        ])
    }

    @Test func grantsAndEndsBeyondTheBurstAreCountedInOneSummaryAtTheIntervalsEnd() {
        var budget = JournalBudget(limits: .init(perAppBurst: 4, globalBurst: 100, interval: .seconds(30)))
        let first = admitMany(&budget, .grant, mail, 3, at: 1_000)
        let second = admitMany(&budget, .end, mail, 3, at: 2_000)
        #expect((first.journaled, first.coalesced, second.journaled, second.coalesced) == (3, 0, 1, 2))
        let more = admitMany(&budget, .grant, mail, 5, at: 3_000)
        #expect((more.journaled, more.coalesced) == (0, 5))
        // The interval began with the first grant, at 1 s: it ends at 31 s.
        #expect(budget.nextDeadline == Self.at(31_000))
        #expect(budget.deadlineReached(now: Self.at(30_999)) == [])
        let summaries = budget.deadlineReached(now: Self.at(31_000))
        #expect(summaries == [
            .init(app: mail, apps: 1, granted: 5, ended: 2, intervalStart: Self.at(1_000), intervalEnd: Self.at(31_000))
        ])
        #expect(budget.nextDeadline == nil)
        // A late second wake-up reports nothing twice.
        #expect(budget.deadlineReached(now: Self.at(31_500)) == [])
        // A new interval: a full burst again.
        let next = admitMany(&budget, .grant, mail, 5, at: 40_000)
        #expect((next.journaled, next.coalesced) == (4, 1))
        #expect(budget.nextDeadline == Self.at(70_000))
    }

    @Test func aLateTimerIsHarmlessTheNextDecisionClosesTheIntervalFirst() {
        var budget = JournalBudget(limits: .init(perAppBurst: 1, globalBurst: 100, interval: .seconds(1)))
        _ = admitMany(&budget, .grant, mail, 3, at: 0)
        // No timer ran; a grant at 5 s first gets the old interval's summary, then is journaled itself.
        let (verdict, summaries) = budget.admit(.grant, app: mail, now: Self.at(5_000))
        #expect(verdict == .journal)
        #expect(summaries.map(\.granted) == [2])
        #expect(summaries.first?.intervalEnd == Self.at(1_000))
    }

    @Test func eachAppHasItsOwnBurst() {
        var budget = JournalBudget(limits: .init(perAppBurst: 10, globalBurst: 1_000, interval: .seconds(30)))
        let flood = admitMany(&budget, .grant, mail, 15_000, at: 0)
        #expect((flood.journaled, flood.coalesced) == (10, 14_990))
        let other = admitMany(&budget, .grant, music, 10, at: 10)
        #expect(other.journaled == 10)
        let summaries = budget.deadlineReached(now: Self.at(30_000))
        #expect(summaries.map(\.app) == [mail])
        #expect(summaries.map(\.granted) == [14_990])
    }

    @Test func theGlobalBurstBoundsAllAppsTogether() {
        // 1,000 apps × 10 would be 10,000 entries: the global burst keeps it at 50.
        var budget = JournalBudget(limits: .init(perAppBurst: 10, globalBurst: 50, interval: .seconds(30), maxAppSummaries: 3))
        var journaled = 0
        let apps = (0..<1_000).compactMap { AppID("org.example.App\($0)") }
        for app in apps {
            journaled += admitMany(&budget, .grant, app, 10, at: 0).journaled
        }
        #expect(journaled == 50)
        let summaries = budget.deadlineReached(now: Self.at(30_000))
        // Three apps get their own summary, the rest share one; every decision is counted once.
        #expect(summaries.count == 4)
        #expect(summaries.prefix(3).allSatisfy { $0.app != nil && $0.apps == 1 })
        #expect(summaries.last?.app == nil)
        #expect(summaries.map(\.apps).reduce(0, +) == 1_000 - 5)
        #expect(summaries.map(\.granted).reduce(0, +) == 10_000 - 50)
    }

    @Test func withinAnyJournaldWindowTheDefaultsStayFarBelowItsLimit() {
        // SPEC §11: app-caused grant/end entries can never reach journald's 10,000 per 30 s. The worst case:
        // every app floods all the time. Count what is journaled (entries and summaries) over 10 minutes in
        // every 30 s window, sliding by 1 s.
        var budget = JournalBudget()
        let apps = (0..<200).compactMap { AppID("org.example.App\($0)") }
        var written: [Int64] = []  // ms of each entry
        for ms in stride(from: Int64(0), to: 600_000, by: 250) {
            written += budget.deadlineReached(now: Self.at(ms)).map { _ in ms }
            for app in apps {
                let (verdict, summaries) = budget.admit(.grant, app: app, now: Self.at(ms))
                written += Array(repeating: ms, count: summaries.count)
                if verdict == .journal { written.append(ms) }
            }
        }
        var worst = 0
        for start in stride(from: Int64(0), to: 570_000, by: 1_000) {
            worst = max(worst, written.filter { $0 >= start && $0 < start + 30_000 }.count)
        }
        #expect(worst <= 2 * (1_000 + 100 + 1) + 101)
        #expect(worst < 10_000 / 4)
    }
}
