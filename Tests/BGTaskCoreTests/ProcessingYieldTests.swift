import Foundation
import BGTaskCore
import Testing

/// SPEC §16: a running processing task yields when an app becomes active (the user started using the
/// device); a refresh task does not.
@Suite struct ProcessingYieldTests {
    /// Mail launched and sent to the background (suspended), then Music launched into the background for
    /// a task `identifier` of `kind`, running it.
    static func running(_ kind: TaskKind, _ identifier: String) -> Harness {
        var h = Harness()
        h.launchActive(mail, connection: connA, pid: 100)
        if let dib = h.background(mail) { h.send(.eventAcknowledged(dib.id)) }
        #expect(h.state(mail) == .suspended)
        h.send(.taskRunRequested(music, identifier: identifier, kind: kind, reason: .taskScheduled))
        h.send(.appLaunched(music, pid: 200))
        let launched = h.send(.appCheckedIn(music, connection: connB, pid: 200))
        #expect(launched.events.map(\.kind) == [.didFinishLaunching, .didEnterBackground, .performTask])
        for e in launched.events where e.needsAck { h.send(.eventAcknowledged(e.id)) }
        return h
    }

    @Test func aProcessingTaskGetsItsWarningWhenAnotherAppBecomesActiveAndMustEndWithinIt() {
        var h = Self.running(.processing, "p")
        h.after(.seconds(10))
        let active = h.send(.foregroundRequested(mail, exclusive: true))
        let warned = active.events(for: music)
        #expect(warned.map(\.kind) == [.backgroundTaskWillExpire] && warned.first?.identifier == "p")
        #expect(warned.first?.deadline == h.now + .seconds(5))
        let expire = active.decisions(.expire)
        #expect(expire.map(\.reason) == [.anotherAppForeground] && expire.first?.app == music)
        #expect(active.last.map { if case .reply = $0 { true } else { false } } == true, "the reply stays the last action")
        // Not completed within ExpirationWarningSec: the app is terminated, as at the end of its budget.
        #expect(h.after(.seconds(5) - .oneMicrosecond).decisions(.terminate).isEmpty)
        #expect(h.after(.oneMicrosecond).decisions(.terminate).map(\.reason) == [.taskNotCompleted])
    }

    @Test func aCompletedTaskEndsInPeaceAndARefreshTaskIsLeftAlone() {
        var h = Self.running(.processing, "p")
        h.send(.foregroundRequested(mail, exclusive: true))
        let done = h.send(.taskCompleted(music, identifier: "p", success: true))
        #expect(done.replies == [.ok] && done.decisions(.terminate).isEmpty)

        var r = Self.running(.refresh, "r")
        let active = r.send(.foregroundRequested(mail, exclusive: true))
        #expect(active.events(for: music).isEmpty && active.decisions(.expire).isEmpty)
        // It runs to its own budget's warning (RefreshTaskBudgetSec 30 s − ExpirationWarningSec 5 s).
        #expect(r.after(.seconds(25)).events(for: music).map(\.kind) == [.backgroundTaskWillExpire])
    }

    /// The yield looks only at the apps given tasks (a set kept beside the records, not encoded): an app
    /// whose task ended is left out, one given a task again is looked at again, and a machine decoded from
    /// its encoding (the set not yet counted) finds its running task all the same.
    @Test func theAppsGivenTasksAreFoundAfterTheirTasksEndAndAfterADecode() throws {
        var h = Self.running(.processing, "p")
        h.send(.taskCompleted(music, identifier: "p", success: true))
        // Mail is made active (the set is counted from the records here), then sent back.
        #expect(h.send(.foregroundRequested(mail, exclusive: true)).decisions(.expire).isEmpty)
        if let dib = h.background(mail) { h.send(.eventAcknowledged(dib.id)) }
        // Music is given a task again while it runs in the background.
        h.send(.taskRunRequested(music, identifier: "q", kind: .processing, reason: .taskScheduled))
        let copy = h.machine
        let again = h.send(.foregroundRequested(mail, exclusive: true))
        #expect(again.decisions(.expire).map(\.app) == [music] && again.events(for: music).first?.identifier == "q")

        // The same moment in a machine decoded from the copy's encoding.
        h.machine = try JSONDecoder().decode(LifecycleMachine.self, from: JSONEncoder().encode(copy))
        let decoded = h.send(.foregroundRequested(mail, exclusive: true))
        #expect(decoded.decisions(.expire).map(\.app) == [music] && decoded.events(for: music).first?.identifier == "q")
    }
}
