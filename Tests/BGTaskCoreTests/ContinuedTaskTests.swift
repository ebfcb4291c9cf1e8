import BGTaskCore
import Testing

/// SPEC §16: continued tasks: begun while active, no time budget while progress comes, stalled → expired
/// (`task-stalled`), cancelled by the user (`user-cancelled`), ended by `EndBackgroundTask`.
@Suite struct ContinuedTaskTests {
    static let export = ContinuedTaskRequest(identifier: "export", title: "Exporting video", totalUnits: 100)

    static func begin(_ h: inout Harness) -> TaskID {
        for case .reply(.taskID(let task), _) in h.send(.continuedTaskRequested(mail, connection: connA, export)) { return task }
        return .invalid
    }

    /// Mail active with a continued task, then in the background (acknowledged).
    static func inBackground() -> (Harness, TaskID) {
        var h = Harness()
        h.launchActive(mail)
        let task = begin(&h)
        if let dib = h.background(mail) { h.send(.eventAcknowledged(dib.id)) }
        return (h, task)
    }

    @Test func onlyWhileActive() {
        var h = Harness()
        h.launchActive(mail)
        #expect(Self.begin(&h) != .invalid)
        if let dib = h.background(mail) { h.send(.eventAcknowledged(dib.id)) }
        let refused = h.send(.continuedTaskRequested(mail, connection: connA, Self.export))
        #expect(refused.replies == [.invalidState(.background)])
    }

    @Test func progressKeepsItRunningPastTheBudgetAndEndingItSuspends() {
        var (h, task) = Self.inBackground()
        #expect(h.state(mail) == .background)
        for n in 1...4 {
            let out = h.after(.seconds(29), .taskProgressReported(mail, task, TaskProgress(completedUnits: Int64(n * 10))))
            #expect(out.replies == [.ok] && out.sigterms.isEmpty && out.events.isEmpty, "at \(n * 29) s")
        }
        #expect(h.machine.liveContinuedTasks.map(\.completedUnits) == [40])
        // Progress goes to Monitor (an action, no decision: never journaled).
        let reported = h.send(.taskProgressReported(mail, task, TaskProgress(completedUnits: 41, subtitle: "clip 2")))
        let units: [Int64] = reported.compactMap { if case .progressReported(let t) = $0 { return t.completedUnits } else { return nil } }
        #expect(units == [41])
        #expect(reported.decisions.isEmpty)
        #expect(h.machine.liveContinuedTasks.first?.fraction == 0.41)
        let end = h.send(.assertionEndRequested(mail, task))
        #expect(end.freezes == [mail] && h.machine.liveContinuedTasks.isEmpty)
    }

    @Test func aStalledTaskExpires() {
        var (h, task) = Self.inBackground()
        #expect(h.after(.seconds(30) - .oneMicrosecond).events.isEmpty)
        let stalled = h.after(.oneMicrosecond)
        #expect(stalled.events.map(\.kind) == [.backgroundTaskWillExpire] && stalled.events.first?.taskID == task)
        #expect(stalled.decisions.map { "\($0.kind.rawValue)/\($0.reason.rawValue)" }.prefix(2) == ["expire/task-stalled", "end/task-stalled"])
        #expect(stalled.freezes == [mail] && h.machine.liveContinuedTasks.isEmpty)
    }

    @Test func theUserCancelsIt() {
        var (h, task) = Self.inBackground()
        let cancelled = h.send(.continuedTaskCancelled(mail, task))
        #expect(cancelled.events.map(\.kind) == [.backgroundTaskWillExpire])
        #expect(cancelled.decisions(.expire).map(\.reason) == [.userCancelled])
        #expect(cancelled.replies == [.ok] && cancelled.freezes == [mail])
        #expect(h.send(.continuedTaskCancelled(mail, task)).replies == [.invalidState(.suspended)])
    }

    @Test func itEndsWithItsConnection() {
        var (h, _) = Self.inBackground()
        h.send(.connectionClosed(connA))
        #expect(h.machine.liveContinuedTasks.isEmpty)
        #expect(h.after(.seconds(31)).events.isEmpty, "no stall after it ended")
    }
}

extension ContinuedTaskTests {
    @Test func underMemoryPressureTheTaskWithTheLeastProgressEndsFirst() {
        var h = Harness()
        h.launchActive(mail, connection: connA, pid: 100)
        let first = Self.begin(&h)
        let second: TaskID = {
            for case .reply(.taskID(let t), _) in h.send(.continuedTaskRequested(mail, connection: connA,
                ContinuedTaskRequest(identifier: "upload", title: "Uploading", totalUnits: 10))) { return t }
            return .invalid
        }()
        h.send(.taskProgressReported(mail, first, TaskProgress(completedUnits: 80)))  // 80 of 100
        h.send(.taskProgressReported(mail, second, TaskProgress(completedUnits: 2)))  // 2 of 10
        if let dib = h.background(mail) { h.send(.eventAcknowledged(dib.id)) }
        let reclaim = h.send(.memoryReclaimRequested(count: 1))
        #expect(reclaim.decisions(.expire).map(\.reason) == [.memoryPressure])
        #expect(reclaim.decisions(.expire).first?.taskID == second)
        #expect(reclaim.sigterms.isEmpty && h.machine.liveContinuedTasks.map(\.taskID) == [first])
    }
}
