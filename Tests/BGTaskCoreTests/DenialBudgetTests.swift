import BGTaskCore
import Testing

/// The denial budget (issue 11, point 2 for denials), with time stepped by hand.
@Suite struct DenialBudgetTests {
    private static func at(_ ms: Int64) -> Instant { Instant(microseconds: ms * 1_000) }

    /// The process `pid` of `uid` (by default one process per uid).
    private static func caller(_ uid: UInt32, pid: Int32? = nil) -> DenialBudget.Caller {
        DenialBudget.Caller(uid: uid, pid: pid ?? Int32(uid) + 100_000)
    }

    /// Denials of process `pid` of `uid` at `ms`: how many were served, and the pauses.
    private func deny(_ budget: inout DenialBudget, uid: UInt32, pid: Int32? = nil, _ n: Int, at ms: Int64)
        -> (served: Int, pauses: [DenialBudget.Pause], released: Bool)
    {
        var served = 0
        var pauses: [DenialBudget.Pause] = []
        var released = false
        for _ in 0..<n {
            let (verdict, r) = budget.denied(Self.caller(uid, pid: pid), now: Self.at(ms))
            released = released || r
            switch verdict {
            case .serve: served += 1
            case .pause(let p): pauses.append(p)
            }
        }
        return (served, pauses, released)
    }

    @Test func pastTheProcesssBurstEachDenialPausesItsConnectionUntilTheIntervalEnds() {
        var budget = DenialBudget(limits: .init(perCallerBurst: 3, globalBurst: 100, interval: .seconds(2)))
        #expect(budget.nextDeadline == nil)
        let under = deny(&budget, uid: 1000, 3, at: 500)
        #expect(under.served == 3 && under.pauses.isEmpty)
        #expect(budget.nextDeadline == nil && !budget.isPaused(Self.caller(1000)))
        let over = deny(&budget, uid: 1000, 2, at: 900)
        #expect(over.served == 0)
        #expect(over.pauses.map(\.until) == [Self.at(2_500), Self.at(2_500)])  // the interval began at 500 ms
        #expect(over.pauses.map(\.firstOfUID) == [true, false])                // one journal entry per uid
        #expect(over.pauses.map(\.callerDenials) == [4, 5])
        #expect(over.pauses.allSatisfy { !$0.global && $0.intervalStart == Self.at(500) && $0.holdNewConnections == .none })
        #expect(budget.isPaused(Self.caller(1000)) && budget.pauses == 2)
        #expect(budget.nextDeadline == Self.at(2_500))
        // Another uid has a burst of its own and is not paused.
        let other = deny(&budget, uid: 1001, 3, at: 1_000)
        #expect(other.served == 3 && !budget.isPaused(Self.caller(1001)))
        // An early timer changes nothing; at the end the paused connections are read again.
        let reached1 = budget.deadlineReached(now: Self.at(2_499))
        #expect(!reached1)
        #expect(budget.isPaused(Self.caller(1000)))
        let reached2 = budget.deadlineReached(now: Self.at(2_500))
        #expect(reached2)
        #expect(!budget.isPaused(Self.caller(1000)) && budget.nextDeadline == nil)
        let reached3 = budget.deadlineReached(now: Self.at(9_000))
        #expect(!reached3)  // late and again: nothing more
        // A new interval starts at the next denial, with a whole burst again.
        let again = deny(&budget, uid: 1000, 4, at: 10_000)
        #expect(again.served == 3 && again.pauses.map(\.until) == [Self.at(12_000)] && !again.released)
        #expect(again.pauses.first?.firstOfUID == true && budget.pauses == 3)
    }

    /// On a phone every app runs as the user's uid: an app looping a refused call is paused, and a sibling
    /// app (another process of the same uid) refused a call once is not (its Acknowledge would wait too).
    @Test func anotherProcessOfTheSameUIDIsNotPausedBecauseASiblingFloods() {
        var budget = DenialBudget(limits: .init(perCallerBurst: 3, globalBurst: 100, interval: .seconds(30)))
        let flooder = deny(&budget, uid: 1000, pid: 4242, 10, at: 0)
        #expect(flooder.served == 3 && flooder.pauses.count == 7)
        #expect(budget.isPaused(Self.caller(1000, pid: 4242)))
        let sibling = deny(&budget, uid: 1000, pid: 4343, 2, at: 10)
        #expect(sibling.served == 2 && sibling.pauses.isEmpty && !budget.isPaused(Self.caller(1000, pid: 4343)))
        #expect(budget.holdsNewConnections(Self.caller(1000, pid: 4343)) == .none)
    }

    @Test func theGlobalBurstBoundsAllCallersTogether() {
        var budget = DenialBudget(limits: .init(perCallerBurst: 100, globalBurst: 10, interval: .seconds(30)))
        var served = 0
        for uid in UInt32(1000)..<1005 { served += deny(&budget, uid: uid, 2, at: 0).served }
        #expect(served == 10)
        let next = deny(&budget, uid: 1005, 1, at: 1)
        #expect(next.served == 0 && next.pauses.count == 1)
        #expect(next.pauses[0].global && next.pauses[0].totalDenials == 11 && next.pauses[0].callerDenials == 1)
        #expect(budget.isPaused(Self.caller(1005)) && !budget.isPaused(Self.caller(1000)))
        // Everyone's burst spent: a paused process's new connections are held from its first pause.
        #expect(next.pauses[0].holdNewConnections == .caller && budget.holdsNewConnections(Self.caller(1005)) == .caller)
        #expect(budget.holdsNewConnections(Self.caller(1000)) == .none)
    }

    @Test func rootIsCountedLikeEveryoneAndAZeroBurstPausesAtTheFirstDenial() {
        var budget = DenialBudget(limits: .init(perCallerBurst: 0, globalBurst: 0, interval: .seconds(1)))
        let root = deny(&budget, uid: 0, 1, at: 0)
        #expect(root.served == 0 && root.pauses.count == 1 && budget.isPaused(Self.caller(0)))
    }

    @Test func aLateDenialClosesTheOldIntervalAndSaysItsConnectionsMayBeReadAgain() {
        var budget = DenialBudget(limits: .init(perCallerBurst: 1, globalBurst: 100, interval: .seconds(1)))
        #expect(deny(&budget, uid: 7, 2, at: 0).pauses.count == 1)
        // The timer did not fire (or fired late): the next denial, after the interval, releases first.
        let later = deny(&budget, uid: 8, 1, at: 1_500)
        #expect(later.released && later.served == 1 && !budget.isPaused(Self.caller(7)))
        #expect(budget.nextDeadline == nil)
    }

    @Test func aChangedLimitAppliesFromTheNextIntervalOn() {
        var budget = DenialBudget(limits: .init(perCallerBurst: 2, globalBurst: 100, interval: .seconds(1)))
        _ = deny(&budget, uid: 7, 1, at: 0)
        budget.limits = .init(perCallerBurst: 0, globalBurst: 100, interval: .seconds(5))
        #expect(deny(&budget, uid: 7, 1, at: 10).served == 1)      // still the old burst of 2
        #expect(deny(&budget, uid: 7, 1, at: 20).pauses.map(\.until) == [Self.at(1_000)])
        let reached4 = budget.deadlineReached(now: Self.at(1_000))
        #expect(reached4)
        #expect(deny(&budget, uid: 7, 1, at: 2_000).pauses.map(\.until) == [Self.at(7_000)])
    }

    @Test func aProcessPausedMoreOftenThanItMayHoldConnectionsHasItsNewConnectionsHeld() {
        var budget = DenialBudget(limits: .init(perCallerBurst: 1, globalBurst: 100, interval: .seconds(1), maxConnectionsPerUID: 2))
        let denials = deny(&budget, uid: 7, 4, at: 0)
        #expect(denials.served == 1)
        // Paused twice: as often as it may hold connections, so its other connections may be new ones.
        #expect(denials.pauses.map(\.holdNewConnections) == [.none, .none, .caller])
        #expect(budget.holdsNewConnections(Self.caller(7)) == .caller)
        // Its uid's other processes, and other uids, are not held.
        #expect(budget.holdsNewConnections(Self.caller(7, pid: 1)) == .none && budget.holdsNewConnections(Self.caller(8)) == .none)
        let reached = budget.deadlineReached(now: Self.at(1_000))
        #expect(reached && budget.holdsNewConnections(Self.caller(7)) == .none)
    }

    @Test func aUIDWhoseProcessesArePausedTooOftenInAllHasEveryNewConnectionHeld() {
        var budget = DenialBudget(limits: .init(perCallerBurst: 1, globalBurst: 100, interval: .seconds(1), maxConnectionsPerUID: 2))
        // A client that forks: each new process is refused twice (served once, paused once).
        var holds: [DenialBudget.NewConnections] = []
        for pid in Int32(1)...5 { holds += deny(&budget, uid: 7, pid: pid, 2, at: 0).pauses.map(\.holdNewConnections) }
        // Five pauses of uid 7: more than 2 × 2, so from the fifth on every new connection of the uid waits.
        #expect(holds == [.none, .none, .none, .none, .uid])
        #expect(budget.holdsNewConnections(Self.caller(7, pid: 99)) == .uid)
        #expect(budget.holdsNewConnections(Self.caller(8)) == .none)
    }

    /// A process that closes each paused connection and opens a new one, on every connection it may hold:
    /// once it was paused more often than it may hold connections, its new connections are held, so an
    /// interval journals at most burst + 2 × MaxConnectionsPerUser + 1 of its refusals.
    @Test func oneProcessReconnectingAfterEachPauseStaysWithinTheStatedBound() {
        var budget = DenialBudget()  // 100 per process, 1,000 in all, 30 s, 128 connections per uid
        let connections = 128
        let me = Self.caller(1000)
        var paused = Set<Int>()     // connections waiting (paused, or new and held)
        var journaled = 0
        var ms: Int64 = 0
        while ms < 60_000 {
            if budget.deadlineReached(now: Self.at(ms)) { paused.removeAll() }
            for c in 0..<connections where !paused.contains(c) {
                journaled += 1
                let (verdict, released) = budget.denied(me, now: Self.at(ms))
                if released { paused.removeAll() }
                // Paused: it reconnects at once; the new connection is held while the process's are.
                if case .pause = verdict, budget.holdsNewConnections(me) != .none { paused.insert(c) }
            }
            ms += 1
        }
        #expect(journaled <= 2 * (100 + 2 * connections + 1), "\(journaled)")
        // A single process is held as a process: its uid's other processes can still connect.
        #expect(budget.holdsNewConnections(Self.caller(1000, pid: 1)) == .none)
    }

    /// A client that forks a new process for every connection paused, on every connection its uid may hold:
    /// at most everyone's burst, plus 2 × MaxConnectionsPerUser + 1 pauses until the uid's new connections
    /// are held, plus one refusal on each connection open then, per interval.
    @Test func oneUIDForkingAfterEachPauseStaysWithinTheStatedBound() {
        var budget = DenialBudget()
        let connections = 128
        var pid = Int32(1)
        var owner = Array(repeating: Int32(0), count: connections)  // the process holding each connection
        for c in 0..<connections { owner[c] = pid; pid += 1 }
        var paused = Set<Int>()
        var journaled = 0
        var ms: Int64 = 0
        while ms < 60_000 {
            if budget.deadlineReached(now: Self.at(ms)) { paused.removeAll() }
            for c in 0..<connections where !paused.contains(c) {
                journaled += 1
                let (verdict, released) = budget.denied(Self.caller(1000, pid: owner[c]), now: Self.at(ms))
                if released { paused.removeAll() }
                if case .pause = verdict {
                    // A new process takes the connection's place; it waits only if the uid's are held.
                    owner[c] = pid
                    pid += 1
                    if budget.holdsNewConnections(Self.caller(1000, pid: owner[c])) == .uid { paused.insert(c) }
                }
            }
            ms += 1
        }
        #expect(journaled <= 2 * (1000 + 2 * connections + 1 + connections), "\(journaled)")
    }

    /// The bound docs/reliability.md states: within any 30 s window of journald, one process looping a
    /// refused call on every connection it may hold (`MaxConnectionsPerUser=128`) gets at most
    /// 2 × (100 + 128) refusals journaled (plus one budget entry per interval), since a window meets at most
    /// two intervals.
    @Test func oneProcessLoopingOnEveryConnectionItMayHoldStaysWithinTheStatedBound() {
        var budget = DenialBudget()  // the defaults: 100 per process, 1,000 in all, 30 s
        let connections = 128
        var paused = Set<Int>()
        var journaled = 0
        var ms: Int64 = 0
        var firstEntries = 0
        // Every connection that is not paused sends a refused call every millisecond for 60 s.
        while ms < 60_000 {
            if budget.deadlineReached(now: Self.at(ms)) { paused.removeAll() }
            for c in 0..<connections where !paused.contains(c) {
                journaled += 1
                let (verdict, released) = budget.denied(Self.caller(1000), now: Self.at(ms))
                if released { paused.removeAll() }
                if case .pause(let p) = verdict {
                    paused.insert(c)
                    if p.firstOfUID { firstEntries += 1 }
                }
            }
            ms += 1
        }
        // Two intervals of 30 s: each at most the burst plus one refusal per connection.
        #expect(journaled <= 2 * (100 + connections), "\(journaled)")
        #expect(firstEntries == 2)
        #expect(budget.pauses == 2 * connections)
    }
}
