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
}
