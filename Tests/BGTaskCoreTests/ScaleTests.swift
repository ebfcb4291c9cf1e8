import BGTaskCore
import Testing

/// 100,000 live assertions: deadlines live in a heap per app, so every input stays cheap.
/// (A correctness test at scale; speed figures belong to `make bench`.)
@Suite struct ScaleTests {
    @Test func hundredThousandLiveAssertions() {
        let appCount = 2_000
        let perApp = 50
        let apps = (0..<appCount).compactMap { AppID("org.example.app\($0)") }
        #expect(apps.count == appCount)
        var machine = LifecycleMachine()
        var now = Instant.zero
        for (n, app) in apps.enumerated() {
            _ = machine.handle(.appRegistered(AppManifest(id: app)), now: now)
            _ = machine.handle(.launchRequested(app, background: false, exclusive: false), now: now)
            _ = machine.handle(.appCheckedIn(app, connection: ConnectionID(UInt64(n + 1)), pid: Int32(n + 1)), now: now)
        }
        var tasks: [(AppID, TaskID)] = []
        tasks.reserveCapacity(appCount * perApp)
        for (n, app) in apps.enumerated() {
            for _ in 0..<perApp {
                // Assertions on their own connections, apart from the event streams.
                let actions = machine.handle(
                    .assertionRequested(app, connection: ConnectionID(UInt64(1_000_000 + n)), name: nil), now: now)
                for case .reply(.taskID(let task), _) in actions { tasks.append((app, task)) }
            }
        }
        #expect(tasks.count == 100_000)
        #expect(tasks.allSatisfy { $0.1.isValid })
        #expect(machine.liveAssertionCount == 100_000)

        // Everyone to the background, one microsecond apart; all acknowledge.
        var acks: [EventID] = []
        for app in apps {
            now = now + .microseconds(1)
            for case .deliver(_, _, let event) in machine.handle(.backgroundRequested(app), now: now)
            where event.kind == .didEnterBackground {
                acks.append(event.id)
            }
        }
        #expect(machine.nextDeadline == Instant(microseconds: 1) + .seconds(5))
        for ack in acks { _ = machine.handle(.eventAcknowledged(ack), now: now) }
        #expect(machine.nextDeadline == Instant(microseconds: 1) + .seconds(25))
        #expect(machine.apps(now: now).allSatisfy { $0.state == .background })

        // End them all: every app is frozen as its last one ends, and no deadline is left.
        var frozen = 0
        for (app, task) in tasks {
            var actions = machine.handle(.assertionEndRequested(app, task), now: now)
            // The shell's answers (SPEC §14): no lock held; the freeze done.
            for case .observeLocks(let app, _) in actions {
                actions += machine.handle(.locksObserved(app, LockObservation()), now: now)
            }
            for case .freeze(let app, _, _) in actions { _ = machine.handle(.freezeConfirmed(app), now: now) }
            frozen += actions.filter { if case .freeze = $0 { true } else { false } }.count
        }
        #expect(frozen == appCount)
        #expect(machine.liveAssertionCount == 0)
        #expect(machine.nextDeadline == nil)
        #expect(machine.handle(.deadlineReached, now: now + .minutes(10)).isEmpty)
    }

    @Test func manyDeadlinesFireInOrder() {
        // Many apps in their grace windows at scattered instants, acknowledged or not; each fires at its own instant.
        var machine = LifecycleMachine()
        let apps = (0..<500).compactMap { AppID("org.example.g\($0)") }
        var acks: [AppID: EventID] = [:]
        for (n, app) in apps.enumerated() {
            let at = Instant(microseconds: Int64((n * 7919) % 1_000_003))
            _ = machine.handle(.appRegistered(AppManifest(id: app)), now: .zero)
            _ = machine.handle(.launchRequested(app, background: true, exclusive: false), now: .zero)
            for case .deliver(_, _, let event) in machine.handle(
                .appCheckedIn(app, connection: ConnectionID(UInt64(n + 1)), pid: 1), now: at)
            where event.kind == .didEnterBackground {
                acks[app] = event.id
            }
        }
        for (n, app) in apps.enumerated() where n % 2 == 0 {
            if let ack = acks[app] { _ = machine.handle(.eventAcknowledged(ack), now: Instant(microseconds: 1_000_003)) }
        }
        var last = Instant.zero
        var terminated: [AppID] = []
        while let next = machine.nextDeadline, next < Instant.zero + .seconds(7) {
            #expect(next >= last)
            last = next
            for action in machine.handle(.deadlineReached, now: next) {
                if let decision = action.decision, decision.reason == .didEnterBackgroundTimeout, decision.kind == .terminate,
                    case .record = action, let app = decision.app
                {
                    terminated.append(app)
                }
            }
        }
        #expect(Set(terminated) == Set(apps.enumerated().filter { $0.offset % 2 == 1 }.map { $0.element }))
    }
}
