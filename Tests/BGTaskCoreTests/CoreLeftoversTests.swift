import BGTaskCore
import Testing

/// issue 13's leftovers: decisions the shell used to take, now the core's (hand-stepped time).
@Suite struct CoreLeftoversTests {
    // MARK: HoldLost

    /// SPEC §12: the app's termination ends the Hold call: the core names the call (its request), once.
    @Test func terminatingAHeldAppEndsTheHoldCallOnce() {
        var h = Harness()
        h.launchActive(mail)
        let holdCall = RequestID(7)
        let granted = h.machine.handle(.holdRequested(mail, connection: connB, name: "x"), now: h.now, request: holdCall)
        guard case .reply(.holdID(let hold), to: holdCall)? = granted.last, hold != .invalid else {
            return #expect(Bool(false), "\(granted)")
        }
        // An ordinary assertion on the same app has no Hold call: nothing to end for it.
        let task = h.begin(mail)
        #expect(task != .invalid)
        let terminated = h.after(.seconds(1), .terminateRequested(mail))
        let lost = terminated.compactMap { action -> (AppID, TaskID, RequestID, Decision)? in
            if case .holdLost(let app, let task, let request, let decision) = action { return (app, task, request, decision) }
            return nil
        }
        #expect(lost.count == 1)
        #expect(lost.first?.0 == mail && lost.first?.1 == hold && lost.first?.2 == holdCall)
        #expect(lost.first?.3.kind == .terminate && lost.first?.3.reason == .userRequest)
        // It follows the terminate decision it names.
        let decided = terminated.firstIndex { $0.decision?.kind == .terminate }
        let ended = terminated.firstIndex { if case .holdLost = $0 { true } else { false } }
        #expect(decided != nil && ended != nil && decided! < ended!)
        // The escalation decides again (SIGTERM, SIGKILL): the call was ended already.
        let later = h.after(.seconds(5)) + h.after(.seconds(5))
        #expect(later.decisions(.terminate).count == 2)
        #expect(!later.contains { if case .holdLost = $0 { true } else { false } })
    }

    @Test func aHoldEndedBeforeTheTerminationHasNoCallToEnd() {
        var h = Harness()
        h.launchActive(mail)
        _ = h.machine.handle(.holdRequested(mail, connection: connB, name: nil), now: h.now, request: RequestID(3))
        h.send(.connectionClosed(connB))
        let terminated = h.send(.terminateRequested(mail))
        #expect(!terminated.decisions(.terminate).isEmpty)
        #expect(!terminated.contains { if case .holdLost = $0 { true } else { false } })
    }

    // MARK: memory pressure (SPEC §8)

    /// The trigger is a fact; warning first, then one app per trigger while it persists, a new episode
    /// (a new warning) after 3 quiet windows. Journal decisions as for the requests; no reply.
    @Test func pressureTriggersWarnThenReclaimOneAppPerTrigger() {
        var h = Harness()
        h.launchActive(mail, connection: connA, pid: 1)
        h.launchActive(music, connection: connB, pid: 2)
        h.send(.launchRequested(terminal, background: false, exclusive: false))
        h.send(.appLaunched(terminal, pid: 3))
        guard let dib = h.background(mail) else { return #expect(Bool(false)) }
        h.send(.eventAcknowledged(dib.id))  // mail suspended
        _ = h.begin(music, on: connB)
        guard let dib2 = h.background(music) else { return #expect(Bool(false)) }
        h.send(.eventAcknowledged(dib2.id))  // music running in the background (its assertion)
        #expect(h.state(mail) == .suspended && h.state(music) == .background)
        let window = TimeSpan.seconds(1)
        let t0 = h.now + .seconds(10)

        let first = h.at(t0, .memoryPressureTriggered(window: window))
        #expect(first.first == .memoryPressure(.warn))
        #expect(first.events(for: music).map(\.kind) == [.memoryWarning])
        #expect(first.decisions(.notify).map(\.reason) == [.memoryPressure])
        #expect(first.kills.isEmpty && first.sigterms.isEmpty && first.replies.isEmpty)

        let second = h.at(t0 + window, .memoryPressureTriggered(window: window))
        #expect(second.first == .memoryPressure(.reclaim(count: 1)))
        #expect(second.kills == [mail], "the suspended app first")
        #expect(second.events(for: music).isEmpty && second.replies.isEmpty)

        let third = h.at(t0 + .seconds(2), .memoryPressureTriggered(window: window))
        #expect(third.first == .memoryPressure(.reclaim(count: 1)))
        #expect(third.events(for: music).map(\.kind) == [.willTerminate])
        #expect(third.decisions(.terminate).allSatisfy { $0.reason == .memoryPressure })
        #expect(h.snapshot(terminal)?.terminating == false, "never an active app")

        // 3 windows after the last trigger is still the same episode…
        let fourth = h.at(t0 + .seconds(5), .memoryPressureTriggered(window: window))
        #expect(fourth.first == .memoryPressure(.reclaim(count: 1)))
        #expect(h.snapshot(terminal)?.terminating == false)
        // …one microsecond more and it is a new one: a warning first.
        // (Music's escalation, due meanwhile, fires first, at its own instant.)
        let fifth = h.at(t0 + .seconds(8) + .oneMicrosecond, .memoryPressureTriggered(window: window))
        let response = fifth.firstIndex { if case .memoryPressure = $0 { true } else { false } }
        #expect(response.map { fifth[$0] } == .memoryPressure(.warn))
        let taken = Array(fifth[(response ?? 0)...])
        #expect(taken.kills.isEmpty && taken.sigterms.isEmpty)
    }

    // MARK: InvalidState carries the state

    @Test func aRefusalForTheAppsStateCarriesThatState() {
        var h = Harness()
        #expect(h.send(.holdRequested(terminal, connection: connB, name: nil)).replies == [.invalidState(.notRunning)])
        h.launchActive(mail)
        _ = h.background(mail)
        h.send(.terminateRequested(mail))
        #expect(h.snapshot(mail)?.terminating == true)
        #expect(h.send(.foregroundRequested(mail, exclusive: false)).replies == [.invalidState(.background)])
        #expect(h.send(.activityRequested(music, connection: connB, mode: .audio)).replies == [.invalidState(.notRunning)])
    }
}
