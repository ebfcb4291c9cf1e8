// The answer to a `Launch` or `Foreground` call that started its app's spawn (SPEC §2, issue 12): the call
// is answered once the spawn's result is known, `ok` or `LaunchFailed`. The core knows which call it
// answers (the input it came with), so the shell never asks the call which method it named.

/// The `Launch`/`Foreground` call being handled, and whether it started its app's spawn.
struct LaunchCall: Hashable, Sendable, Codable {
    var app: AppID
    var request: RequestID
    var launched = false

    /// The call of `input`, if it is a `Launch` or `Foreground` call.
    init?(_ input: Input, _ request: RequestID?) {
        guard let request else { return nil }
        switch input {
        case .launchRequested(let app, _, _), .foregroundRequested(let app, _):
            self.app = app
            self.request = request
        default:
            return nil
        }
    }

    /// The lifecycle machine launches `app`.
    mutating func started(_ app: AppID) {
        if app == self.app { launched = true }
    }
}

extension DaemonCore {
    /// What answers the lifecycle machine's `reply` to the call `id` instead, if it waits: for the spawn the
    /// call started (an `ok` of Launch or Foreground), or for the refresh state to be saved (RunTaskNow).
    mutating func replyWaits(_ reply: Reply, to id: RequestID) -> CoreAction? {
        if case .ok = reply, let call = launchCall, call.request == id, call.launched {
            launchReplies[call.app, default: []].append(id)
            return .replyAwaitsLaunch(call.app, to: id)
        }
        if saveBeforeReply == id {
            saveBeforeReply = nil
            return .saveRefreshState(answer: .lifecycle(reply), to: id)
        }
        return nil
    }

    /// The spawn's result (`appLaunched`, `launchFailed`) answers the calls that wait for it, after the
    /// actions it caused.
    mutating func spawnAnswered(_ input: Input) {
        let app: AppID, failure: String?
        switch input {
        case .appLaunched(let a, _): (app, failure) = (a, nil)
        case .launchFailed(let a, let message): (app, failure) = (a, message)
        default: return
        }
        guard let waiting = launchReplies.removeValue(forKey: app) else { return }
        for id in waiting { out.append(.answerLaunch(app, to: id, failure: failure)) }
    }
}
