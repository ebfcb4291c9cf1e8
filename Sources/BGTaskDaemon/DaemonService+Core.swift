import BGTaskConfig
import BGTaskCore
import BGTaskProtocol
import BGTaskVarlink
import Dispatch

// Driving the one core (DaemonCore): requests and facts in, actions out (performed in +Perform), the one
// monotonic timer armed for its next deadline. Every input goes through `feedCore`, where it is recorded
// (SPEC §17) when `RecordInputs=yes`.
extension DaemonService {
    func openRequest(_ request: VarlinkRequest) -> RequestID {
        nextRequestNumber += 1
        let id = RequestID(nextRequestNumber)
        openRequests[id] = request
        return id
    }

    /// Feeds a request's input and answers the request from the core's reply.
    func run(_ input: Input, for request: VarlinkRequest) {
        let id = openRequest(request)
        feed(input, request: id)
        if let still = openRequests.removeValue(forKey: id), still.isOpen, !still.call.more {
            // Every request input yields one reply; this is a safety net for invariants.
            still.reply()
        }
    }

    /// Asks the core whether `request`'s caller may make it (issue 13: the core decides on the credentials
    /// and journals a denial); a refused request is failed here.
    func permitted(_ input: Input, _ request: VarlinkRequest) -> Bool {
        // issue 15: the common case, an App call its app's user (or root) may make, asks the core without
        // feeding it (no request, no reply, no actions); the core still decides, and a refusal is fed in
        // full below, so it is recorded and journaled as before.
        if case .appCallReceived(let app, _, let caller) = input, core.allowsAppCall(app, caller: caller) {
            return true
        }
        // The same for a control call (the resume path: a Foreground's check was a whole feed before it).
        if case .controlCallReceived(let caller, let groups) = input, core.allowsControlCall(caller, groups: groups) {
            return true
        }
        let id = openRequest(request)
        checks.insert(id)
        feed(input, request: id)
        checks.remove(id)
        openRequests[id] = nil
        guard let verdict = verdicts.removeValue(forKey: id) else { return false }
        if case .ok = verdict { return true }
        send(verdict, to: request)
        return false
    }

    /// Feeds one input (and the inputs its actions cause), performs the actions, re-arms the timer.
    func feed(_ first: Input) { feed(first, request: nil) }

    /// Who made `request`: a refusal of it counts for its connection and process.
    static func origin(of request: VarlinkRequest) -> CallOrigin {
        CallOrigin(
            connection: ConnectionID(request.connection.id),
            caller: DenialBudget.Caller(uid: request.peer.uid, pid: request.peer.pid))
    }

    /// The same for the input of a request: the core's reply names `request`.
    func feed(_ first: Input, request: RequestID?) {
        let origin = request.flatMap { openRequests[$0] }.map(Self.origin(of:))
        take(.lifecycle(first, request: request, from: origin), request: request)
    }

    /// Feeds an input of the core that is no call's (budgets, deadlines, refresh, a freeze's parts), performs
    /// its actions; the inputs they cause follow.
    func feedCore(_ input: CoreInput) { take(input, request: nil) }

    /// Feeds `first` (and the inputs its actions cause), performs the actions, re-arms the timer.
    private func take(_ first: CoreInput, request: RequestID?) {
        feedDepth += 1
        defer {
            feedDepth -= 1
            if feedDepth == 0, !factsAfterFeed.isEmpty {
                let facts = factsAfterFeed
                factsAfterFeed.removeAll()
                for fact in facts { feedCore(fact) }
            }
        }
        // The inputs the actions cause (a spawn's result) follow the first; no array for the common case
        // of none (issue 15: nothing allocated per call that is not needed).
        var follows: [CoreInput] = []
        var next = 0
        var input = first
        while true {
            for action in takeCore(input) {
                if !pendingThaws.isEmpty, !Self.mayPrecedeThaw(action) { completeThaws() }
                if let follow = perform(action, for: request) { follows.append(follow) }
            }
            completeThaws()
            guard next < follows.count else { break }
            input = follows[next]
            next += 1
        }
        armTimer()
        armWallTimer()
    }

    /// The one place the core takes an input: at both clocks' now, read together, and recorded with them
    /// (SPEC §17).
    func takeCore(_ input: CoreInput) -> [CoreAction] {
        let t = now()
        let wall = clock.realtime()
        let actions = core.handle(input, now: t, wall: wall)
        burstTrim.note(on: queue)
        if recording?.append(input, monotonic: t, realtime: wall, actions: actions) == true {
            // The ring's segment is full: the next begins with a copy of the core as it is now (O(1)).
            recording?.startSegment(core)
            compactRecording()
        } else if recording?.blockWaitsToCompact() == true {
            compactRecording()
        }
        return actions
    }

    /// Answers the Launch/Foreground call `id` names, which waited for its app's spawn (the core's
    /// `.answerLaunch`).
    func answerLaunch(_ app: AppID, to id: RequestID, failure: String?) {
        guard let request = launchReplies.removeValue(forKey: id) else { return }
        if let failure {
            request.fail(ManagerError.launchFailed(appId: app.rawValue, message: failure))
        } else {
            request.reply()
        }
    }

    /// SIGTERM (SPEC §9): terminates every app this daemon started and calls `completion` when the core
    /// says the stop is over: all have exited, or (with those left) its time limit passed.
    func stopApps(completion: @escaping ([AppID]) -> Void) {
        stopCompletion = completion
        feed(.stopRequested)
    }

    /// A turn of the Varlink server begins: the timer is set at its end, for the deadline the turn's calls
    /// left (a call that arms a deadline and the next that cancels it, a background launch and its
    /// Foreground, would each re-arm libdispatch's timer: a write to its manager's eventfd and a wake-up
    /// of its thread). Nothing is late for it: the timer's handler runs on this queue, after the turn, and
    /// every input fires the core's due deadlines first.
    func holdTimer() { timerHold.held = true }

    /// The turn ended: the timer is set for the core's next deadline if a call changed it.
    func releaseTimer() {
        if timerHold.release() { armTimer() }
    }

    func armTimer() {
        if timerHold.held {
            // Owed only when the deadline is not the one armed: a turn of calls that leave it alone (a
            // foreground app's Begin/End) sets nothing at its end.
            if core.peekNextDeadline() != armedDeadline { timerHold.owed = true }
            return
        }
        // In place (`peekNextDeadline` is mutating): reading the core's deadline from this class would copy
        // the whole machine, twice per call on the hot path (issue 15). The core merges its parts' deadlines.
        guard let deadline = core.peekNextDeadline() else {
            if armedDeadline != nil {
                timer?.suspend()
                armedDeadline = nil
                timerSettings += 1
            }
            return
        }
        if deadline == armedDeadline { return }
        timerSettings += 1
        let delay = max(0, deadline.microseconds - now().microseconds)
        if timer == nil {
            let t = DispatchSource.makeTimerSource(flags: .strict, queue: queue)
            t.setEventHandler { [weak self] in
                guard let self else { return }
                self.armedDeadline = nil
                self.timer?.suspend()
                self.timerFired()
            }
            timer = t
            t.schedule(deadline: .now() + .microseconds(Int(delay)), leeway: .microseconds(50))
            t.resume()
        } else {
            timer?.schedule(deadline: .now() + .microseconds(Int(delay)), leeway: .microseconds(50))
            if armedDeadline == nil { timer?.resume() }
        }
        armedDeadline = deadline
    }

    /// After a system sleep (SPEC §14): the one timer is armed afresh for the next deadline, whichever
    /// clock libdispatch's timer counted the sleep on (early or late is harmless; this makes it prompt).
    func rearmTimer() {
        if armedDeadline != nil {
            timer?.suspend()
            armedDeadline = nil
        }
        armTimer()
    }

    /// The timer fired: its deadlines as one turn of the Varlink server, so that an instant's events (an
    /// app's ten expirations) leave at its end in one write to each stream, after the decisions, and the
    /// journal's writer is woken once they have left, as after a turn of calls.
    func timerFired() {
        if let server {
            server.asTurn { deadlineReached() }
        } else {
            deadlineReached()
        }
    }

    /// The monotonic timer fired (early or late is harmless): the core's deadlines, its budgets' included
    /// (tests call it by hand).
    func deadlineReached() { feedCore(.deadlineReached) }

    /// A part of an app's freeze (the adopted instances) reports it done after `perform` found it not done;
    /// the core counts the parts (``CoreInput/freezePartDone(_:)``; the own freezer's report is
    /// ``CoreInput/freezeChecked(_:_:)``).
    func freezePartDone(_ app: AppID) {
        feedFact(.freezePartDone(app))
    }

    /// Feeds a fact a component reported: now, or after the feed under way (no feed inside a feed).
    func feedFact(_ input: Input) { feedFact(.lifecycle(input, request: nil, from: nil)) }

    /// The same for an input of the core.
    func feedFact(_ input: CoreInput) {
        if feedDepth > 0 {
            factsAfterFeed.append(input)
        } else {
            feedCore(input)
        }
    }

    /// Budget limits from the daemon's configuration.
    static func budgetLimits(_ config: DaemonConfig) -> (JournalBudget.Limits, DenialBudget.Limits) {
        (JournalBudget.Limits(
            perAppBurst: config.journalAssertionBurst, globalBurst: config.journalAssertionGlobalBurst,
            interval: .microseconds(config.journalAssertionIntervalUSec)),
         DenialBudget.Limits(
            perCallerBurst: config.journalDenialBurst, globalBurst: config.journalDenialGlobalBurst,
            interval: .microseconds(config.journalAssertionIntervalUSec), maxConnectionsPerUID: config.maxConnectionsPerUser))
    }
}

/// SPEC §11's journal budget as Stats shows it.
struct JournalBudgetView {
    /// Decisions counted in summaries rather than journaled one by one.
    var coalesced: Int
    /// Summaries journaled.
    var summaries: Int
    /// When the current interval ends, if it has summaries to journal then.
    var nextDeadline: Instant?
}
