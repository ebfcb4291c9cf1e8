import BGTaskCore
import Testing

// The refresh machine inside the composite core (Composite/DaemonCore+Refresh.swift): its inputs are core
// inputs, its saves and answers core actions, its deadline the core's wall deadline, and the lifecycle
// machine's decisions reach it without the shell. And the Launch reply that waits for the spawn
// (Composite/DaemonCore+Launch.swift). Both clocks are stepped by hand.
@Suite struct DaemonCoreRefreshTests {
    static let news = AppID("org.example.News")!
    static let refreshID = "org.example.News.refresh"
    static let start = RealtimeInstant(microsecondsSinceEpoch: 1_700_000_000_000_000)

    /// A core with Mail (no refresh) and News (a refresh task permitted), refresh started.
    struct Clocked {
        var core: DaemonCore
        var monotonic = Instant(microseconds: 1_000_000)
        var wall = DaemonCoreRefreshTests.start
        var inputs: [RecordedInput] = []
        let startValue: RecordingStart

        init() {
            let refresh = RefreshConfig(
                apps: [DaemonCoreRefreshTests.news: RefreshConfig.App(permittedIdentifiers: [DaemonCoreRefreshTests.refreshID], backgroundModes: [.fetch])])
            startValue = RecordingStart(lifecycle: .default, journal: JournalBudget.Limits(), denial: DenialBudget.Limits(), refresh: refresh)
            core = startValue.makeCore()
            for m in [AppManifest(id: mail), AppManifest(id: DaemonCoreRefreshTests.news, backgroundModes: [.fetch])] {
                feed(.lifecycle(.appRegistered(m), request: nil, from: nil))
            }
            feed(.refresh(.stateLoaded(RefreshState()), request: nil, from: nil))
            feed(.refresh(.started(detectedPower: nil), request: nil, from: nil))
        }

        @discardableResult
        mutating func feed(_ input: CoreInput) -> [CoreAction] {
            let actions = core.handle(input, now: monotonic, wall: wall)
            inputs.append(RecordedInput(
                monotonicUSec: monotonic.microseconds, realtimeUSec: wall.microsecondsSinceEpoch, input: input,
                decisions: actions.map(DaemonCore.describe)))
            return actions
        }

        mutating func advance(_ span: TimeSpan) {
            monotonic = monotonic + span
            wall = wall + span
        }
    }

    static func decisions(_ actions: [CoreAction]) -> [Decision] { actions.compactMap(\.decision) }

    /// A submitted request is answered once saved; its date is the core's wall deadline; the wall deadline
    /// launches the app for it with `task-scheduled`, and the state that says it left is saved.
    @Test func aDueRequestLaunchesItsAppAtTheWallDeadline() throws {
        var c = Clocked()
        let begin = Self.start + .minutes(20)
        let submitted = c.feed(.refresh(
            .taskSubmitted(Self.news, TaskRequest(identifier: Self.refreshID, kind: .refresh, earliestBegin: begin)),
            request: RequestID(1), from: nil))
        #expect(submitted == [.saveRefreshState(answer: .refresh(.ok), to: RequestID(1))])
        #expect(c.core.nextWallDeadline == begin)
        // The monotonic timer is not the refresh machine's.
        #expect(c.core.peekNextDeadline() == nil)

        c.advance(.minutes(20) - .oneMicrosecond)
        let early = c.feed(.wallDeadlineReached)
        #expect(early.isEmpty)
        #expect(c.core.nextWallDeadline == begin)

        c.advance(.oneMicrosecond)
        let due = c.feed(.wallDeadlineReached)
        let launch = try #require(due.first { if case .perform(.launch(Self.news, .backgroundTask, _), _, _) = $0 { return true } else { return false } })
        #expect(launch.decision?.reason == .taskScheduled)
        #expect(due.contains(.saveRefreshState(answer: nil, to: nil)))
        #expect(c.core.nextWallDeadline == nil)
        #expect(c.core.refresh.pendingCount(for: Self.news) == 0)
    }

    /// A policy call is journaled as the core's decision (a fact, for the shell's sentence), counted for
    /// its caller like any, answered once saved; a request due meanwhile is denied, journaled once.
    @Test func lowPowerModeIsTheCoresDecisionAndDeniesADueRequestOnce() {
        var c = Clocked()
        let origin = CallOrigin(connection: connA, caller: DenialBudget.Caller(uid: 0, pid: 7))
        let set = c.feed(.refresh(.lowPowerModeRequested(true), request: RequestID(2), from: origin))
        #expect(set.contains(.saveRefreshState(answer: .refresh(.ok), to: RequestID(2))))
        let policy = Self.decisions(set)
        #expect(policy.map(\.kind) == [.policy])
        #expect(policy.first?.reason == .userRequest)
        #expect(policy.first?.detail == .refresh(.lowPowerModeSet(true)))
        #expect(set.contains { if case .perform(.record, _, let peer) = $0 { return peer?.pid == 7 } else { return false } })

        let submitted = c.feed(.refresh(
            .taskSubmitted(Self.news, TaskRequest(identifier: Self.refreshID, kind: .refresh)), request: RequestID(3), from: origin))
        // Unavailable: refused at submission, journaled.
        #expect(submitted.contains(.answerRefresh(.failure(.unavailable("low-power-mode")), to: RequestID(3))))
        #expect(Self.decisions(submitted).map(\.reason) == [.lowPowerMode])
    }

    /// The lifecycle machine's decisions reach the refresh machine inside the core: a launch into the
    /// foreground is the user's use of an app the user had closed (SPEC §16), saved; no shell glue.
    @Test func aForegroundLaunchReopensAnAppClosedByTheUser() {
        var c = Clocked()
        #expect(c.feed(.refresh(.closedByUser(Self.news), request: nil, from: nil)) == [.saveRefreshState(answer: nil, to: nil)])
        #expect(c.core.refresh.isClosedByUser(Self.news))
        c.advance(.seconds(1))
        c.feed(.lifecycle(.launchRequested(Self.news, background: false, exclusive: true), request: RequestID(4), from: nil))
        c.feed(.lifecycle(.appLaunched(Self.news, pid: 40), request: nil, from: nil))
        let checkIn = c.feed(.lifecycle(.appCheckedIn(Self.news, connection: connA, pid: 40), request: RequestID(5), from: nil))
        #expect(Self.decisions(checkIn).contains { $0.kind == .launch && $0.state == .active })
        #expect(checkIn.contains(.saveRefreshState(answer: nil, to: nil)))
        #expect(!c.core.refresh.isClosedByUser(Self.news))
        #expect(c.core.refresh.state.energy.lastUsed[Self.news] == c.wall)
    }

    /// RunTaskNow: the lifecycle machine's reply to the run is the call's answer, once the request's leaving
    /// the pending list is saved.
    @Test func runTaskNowIsAnsweredByTheLifecycleReplyOnceSaved() {
        var c = Clocked()
        c.feed(.refresh(
            .taskSubmitted(Self.news, TaskRequest(identifier: Self.refreshID, kind: .refresh, earliestBegin: Self.start + .minutes(60))),
            request: RequestID(1), from: nil))
        let run = c.feed(.refresh(.runNowRequested(Self.news, identifier: Self.refreshID), request: RequestID(6), from: nil))
        #expect(run.contains { if case .perform(.launch(Self.news, .backgroundTask, _), _, _) = $0 { return true } else { return false } })
        #expect(run.contains(.saveRefreshState(answer: .lifecycle(.ok), to: RequestID(6))))
        #expect(!run.contains { if case .perform(.reply(_, RequestID(6)?), _, _) = $0 { return true } else { return false } })
        #expect(c.core.refresh.pendingCount(for: Self.news) == 0)
    }

    /// A Launch that starts the spawn is answered with the spawn's result; one of a running app at once.
    @Test func aLaunchIsAnsweredWithItsSpawnsResult() {
        var c = Clocked()
        let launch = c.feed(.lifecycle(.launchRequested(mail, background: false, exclusive: true), request: RequestID(7), from: nil))
        #expect(launch.contains(.replyAwaitsLaunch(mail, to: RequestID(7))))
        #expect(!launch.contains { if case .perform(.reply, _, _) = $0 { return true } else { return false } })
        #expect(c.feed(.lifecycle(.appLaunched(mail, pid: 41), request: nil, from: nil)).last == .answerLaunch(mail, to: RequestID(7), failure: nil))

        let foreground = c.feed(.lifecycle(.foregroundRequested(Self.news, exclusive: true), request: RequestID(8), from: nil))
        #expect(foreground.contains(.replyAwaitsLaunch(Self.news, to: RequestID(8))))
        let failed = c.feed(.lifecycle(.launchFailed(Self.news, message: "no such file"), request: nil, from: nil))
        #expect(failed.last == .answerLaunch(Self.news, to: RequestID(8), failure: "no such file"))

        // Mail is launching already: answered at once.
        let again = c.feed(.lifecycle(.launchRequested(mail, background: false, exclusive: true), request: RequestID(9), from: nil))
        #expect(again.contains(.perform(.reply(.ok, to: RequestID(9)), journaled: true, peer: nil)))
        #expect(!again.contains { if case .replyAwaitsLaunch = $0 { return true } else { return false } })
    }

    /// Refresh inputs are the core's, so a recording of them replays to the same decisions, at its recorded
    /// wall clock (SPEC §17).
    @Test func aDayOfRefreshReplaysEqual() {
        var c = Clocked()
        c.feed(.refresh(
            .taskSubmitted(Self.news, TaskRequest(identifier: Self.refreshID, kind: .refresh, earliestBegin: Self.start + .minutes(120))),
            request: RequestID(1), from: nil))
        c.feed(.refresh(.lowPowerModeRequested(true), request: RequestID(2), from: nil))
        c.advance(.minutes(180))
        c.feed(.wallDeadlineReached)
        c.feed(.refresh(.lowPowerModeRequested(false), request: RequestID(3), from: nil))
        c.advance(.minutes(60))
        c.feed(.wallDeadlineReached)
        let all = c.inputs.flatMap(\.decisions).joined(separator: "\n")
        #expect(all.contains("Low Power Mode on") && all.contains("Reason.lowPowerMode") && all.contains("Reason.taskScheduled"))
        let (_, difference) = CoreReplay.run(CoreRecording(start: c.startValue, inputs: c.inputs))
        #expect(difference == nil)
        // Replayed on another day, the same inputs decide otherwise: the wall clock is an input.
        var shifted = c.inputs
        for i in shifted.indices { shifted[i].realtimeUSec -= 86_400_000_000 }
        #expect(CoreReplay.run(CoreRecording(start: c.startValue, inputs: shifted)).difference != nil)
    }
}
