// SPEC §3: an assertion, an activity and an event stream live no longer than their connection.
/// What each client connection holds; only this file touches its storage.
struct ConnectionTable: Sendable, Codable {
    fileprivate var holdings: [ConnectionID: Holdings] = [:]
    /// Event streams: the connection an app checked in on.
    fileprivate var streams: [ConnectionID: AppID] = [:]

    // The task versions (a Begin and an End of every call on row 1's path) reach the entry by index: the
    // subscripts' `_modify` accessors allocated a frame per call.
    mutating func hold(_ task: TaskID, on connection: ConnectionID) {
        if let i = holdings.index(forKey: connection) {
            holdings.values[i].tasks.insert(task)
        } else {
            holdings[connection] = Holdings(tasks: TaskList(task))
        }
    }

    mutating func hold(_ activity: ActivityID, on connection: ConnectionID) {
        holdings[connection, default: Holdings()].activities.insert(activity)
    }

    mutating func release(_ task: TaskID, on connection: ConnectionID) {
        guard let i = holdings.index(forKey: connection) else { return }
        holdings.values[i].tasks.remove(task)
        if holdings.values[i].isEmpty { holdings.remove(at: i) }
    }

    mutating func release(_ activity: ActivityID, on connection: ConnectionID) {
        holdings[connection]?.activities.remove(activity)
        if holdings[connection]?.isEmpty == true { holdings[connection] = nil }
    }

    /// Everything `connection` held, forgotten.
    mutating func removeHoldings(of connection: ConnectionID) -> Holdings? { holdings.removeValue(forKey: connection) }

    /// The app whose event stream `connection` is.
    func stream(_ connection: ConnectionID) -> AppID? { streams[connection] }

    mutating func setStream(_ connection: ConnectionID, _ app: AppID) { streams[connection] = app }

    /// Forgets the stream; the app it was.
    mutating func removeStream(_ connection: ConnectionID) -> AppID? { streams.removeValue(forKey: connection) }
}

extension LifecycleMachine {
    mutating func connectionClosed(_ connection: ConnectionID) {
        var affected: Set<AppID> = []
        if let held = connections.removeHoldings(of: connection) {
            // Each app's list loses the tasks released in one pass at the end (or before anything reads
            // it: a hold's end looks at whether the app still holds any).
            var unlisted: [Int: Set<TaskID>] = [:]
            for task in held.tasks.sorted {
                guard let assertion = assertionTable[task], let i = slots[assertion.app] else { continue }
                forgetAssertion(task)
                unlisted[i, default: []].insert(task)
                if assertion.managerHold {
                    record(
                        .end, .managerHold, i, taskID: task, taskName: assertion.name,
                        .holdEndedByDisconnect)
                    removeAssertions(unlisted.removeValue(forKey: i) ?? [], from: i)
                    holdEnded(i)
                } else {
                    record(
                        .end, .clientDisconnected, i, taskID: task, taskName: assertion.name, remaining: remaining(i),
                        .assertionReleasedByDisconnect)
                }
                affected.insert(assertion.app)
            }
            for (i, tasks) in unlisted { removeAssertions(tasks, from: i) }
            for activity in held.activities.sorted() {
                guard let owned = activityTable[activity], let i = slots[owned.app] else { continue }
                releaseActivity(activity)
                record(
                    .end, .clientDisconnected, i, activityID: activity,
                    .activityReleasedByDisconnect(owned.mode))
                affected.insert(owned.app)
            }
        }
        if let app = connections.removeStream(connection), let i = slots[app] {
            let streamPID = records[i].pid
            records[i].connection = nil
            if records[i].termination == nil, records[i].state != .notRunning {
                if records[i].launchedByDaemon {
                    // The daemon's own child may check in again; if it does not, launch-timeout.
                    if records[i].manifest.lifecycleAware {
                        deadlines.arm(.launch(app), at: now + nonNegative(config.launchTimeout))
                    }
                } else if records[i].instances.isEmpty {
                    // Started by hand: its event stream was all we knew of it.
                    let previous = records[i].state
                    if previous == .suspended { thaw(i, reason: .clientDisconnected) }
                    resetToNotRunning(i)
                    record(.terminate, .clientDisconnected, i, previous: previous, .eventStreamClosed)
                }
            }
            affected.insert(app)
            // An app the daemon spawned that now counts as gone must not live on unmanaged: kill what is
            // left of its process.
            if let pid = streamPID, spawned[pid] == app, records[i].state == .notRunning, records[i].launch == nil {
                emit(.kill(app, Processes(pid: pid), decision(.terminate, .clientDisconnected, i, severity: .notice, .orphanKilled(pid: pid))))
            }
        }
        for app in affected.sorted() {
            if let i = slots[app] { maybeSuspend(i) }
        }
    }
}
