// The refresh machine inside the composite (SPEC §5, §6, §16): its inputs come as ``CoreInput/refresh(_:request:from:)``
// (the refresh calls, the state loaded, the configuration, the power), as the lifecycle machine's decisions
// (an app's state, its use by the user, a task that started) and as its wall-clock deadline; its runs, wakes
// and status notifications are fed to the lifecycle machine here, and its journal entries, saves and answers
// become ``CoreAction``s. The shell only saves the state (StateStore) and answers.

/// The refresh call an input came with: the request its answer names, who made it, a remote notification's payload.
struct RefreshCall: Hashable, Sendable, Codable {
    var request: RequestID?
    var origin: CallOrigin?
    var payload: Payload?
}

extension DaemonCore {
    /// The name of the notification an app gets when its refresh status changed (SPEC §5).
    public static let refreshStatusNotification = "refresh-status-changed"

    /// The refresh machine's actions for one input, with the lifecycle machine's view of the apps.
    mutating func refreshActions(_ input: RefreshInput) -> [RefreshAction] {
        if case .appStateObserved = input {
            // Taken for every decision, and never reads the apps' facts: no view of the lifecycle machine made.
            return refresh.handle(input, now: clocks, facts: { _ in nil })
        }
        // The refresh machine decides moved out of the composite, so that its facts are read from the
        // lifecycle machine in place: a copy of the lifecycle machine for the closure retained and released
        // every one of its tables, and a whole snapshot was made per look (docs/performance.md, "Row 5b: the
        // core's part"). The placeholder left meanwhile is never read.
        var machine = Self.refreshPlaceholder
        swap(&machine, &refresh)
        defer { swap(&machine, &refresh) }
        return machine.handle(input, now: clocks) { app in lifecycle.refreshFacts(of: app) }
    }

    /// What ``refresh`` holds while it decides (``refreshActions(_:)``): an empty machine, made once.
    private static let refreshPlaceholder = RefreshMachine(config: RefreshConfig())

    /// One refresh input (for `call`, if a call made it): the refresh machine decides, its actions are taken in order.
    mutating func takeRefresh(_ input: RefreshInput, call: RefreshCall?) {
        for action in refreshActions(input) {
            takeRefresh(action, call: call)
        }
    }

    /// A lifecycle decision, as the refresh machine follows it: the app's state (the idle rule, requests
    /// waiting on it) and, for a launch into or a move to the foreground, the user's use of the app (SPEC §16).
    /// Taken once the actions before it are (``settleRefresh()``).
    mutating func observe(_ d: Decision) {
        guard let app = d.app, let appState = d.state else { return }
        refreshInbox.append(.appStateObserved(app, appState))
        if d.kind == .launch || d.kind == .foreground, appState.isForeground { refreshInbox.append(.usedByUser(app)) }
    }

    /// Takes the refresh inputs the lifecycle machine's actions caused, in order (each may cause more), then
    /// the look again the refresh machine asked for. A look asked for again and again is left to the next
    /// input (``peekNextDeadline()`` is then now): one input never loops.
    mutating func settleRefresh() {
        var next = 0
        var reviews = 0
        while true {
            while next < refreshInbox.count {
                let input = refreshInbox[next]
                next += 1
                takeRefresh(input, call: nil)
            }
            guard reviewDue, reviews < Self.reviewsPerInput else { break }
            reviewDue = false
            reviews += 1
            takeRefresh(.reviewRequested, call: nil)
        }
        refreshInbox.removeAll(keepingCapacity: true)
    }

    /// Looks again the refresh machine may take within one input.
    static let reviewsPerInput = 4

    /// One action of the refresh machine.
    mutating func takeRefresh(_ action: RefreshAction, call: RefreshCall?) {
        let now = clocks.monotonic
        switch action {
        case .run(let run):
            let input = Input.taskRunRequested(run.app, identifier: run.identifier, kind: run.kind, reason: run.reason)
            guard run.answersCall, let id = call?.request else { return feedLifecycle(input, now: now) }
            // RunTaskNow: the lifecycle machine's reply answers the call, once the state is saved if it says so.
            let outer = saveBeforeReply
            saveBeforeReply = run.saveBeforeReply ? id : nil
            feedLifecycle(input, now: now, request: id, from: call?.origin)
            saveBeforeReply = outer
        case .wake(let app):
            feedLifecycle(
                .remoteNotificationReceived(app, payload: call?.payload), now: now, request: call?.request, from: call?.origin)
        case .announceStatus(let app, let status, let previous):
            let json = "{\"previousStatus\":\"\(previous.rawValue)\",\"status\":\"\(status.rawValue)\"}"
            feedLifecycle(.notificationPosted(name: Self.refreshStatusNotification, app: app, payload: Payload(json: json)), now: now)
        case .record(let notice):
            let d = Decision(
                kind: notice.kind, reason: notice.reason, app: notice.app, state: notice.state, taskName: notice.taskName,
                severity: notice.severity, detail: .refresh(notice.subject))
            take(.record(d), from: notice.byCall ? call?.origin : nil, now: now)
        case .save(_, let reply):
            // The action's copy of the state is not carried: the shell saves the latest (``refresh``).
            if let reply, let id = call?.request {
                out.append(.saveRefreshState(answer: .refresh(reply), to: id))
            } else {
                out.append(.saveRefreshState(answer: nil, to: nil))
            }
        case .reply(let reply):
            if let id = call?.request { out.append(.answerRefresh(reply, to: id)) }
        case .armWallTimer:
            break  // read as ``nextWallDeadline``
        case .reviewSoon:
            reviewDue = true
        case .cancelWaiting(let app, let identifier):
            feedLifecycle(.waitingTaskCancelled(app, identifier: identifier), now: now)
        }
    }
}
