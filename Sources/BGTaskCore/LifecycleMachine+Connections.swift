// SPEC §3: an assertion, an activity and an event stream live no longer than their connection.
extension LifecycleMachine {
    mutating func connectionClosed(_ connection: ConnectionID) {
        var affected: Set<AppID> = []
        if let held = holdings.removeValue(forKey: connection) {
            for task in held.tasks.sorted() {
                guard let assertion = assertionTable[task], let i = slots[assertion.app] else { continue }
                releaseAssertion(task)
                if assertion.managerHold {
                    record(
                        .end, .managerHold, i, taskID: task, taskName: assertion.name,
                        .holdEndedByDisconnect)
                } else {
                    record(
                        .end, .clientDisconnected, i, taskID: task, taskName: assertion.name, remaining: remaining(i),
                        .assertionReleasedByDisconnect)
                }
                affected.insert(assertion.app)
            }
            for activity in held.activities.sorted() {
                guard let owned = activityTable[activity], let i = slots[owned.app] else { continue }
                releaseActivity(activity)
                record(
                    .end, .clientDisconnected, i, activityID: activity,
                    .activityReleasedByDisconnect(owned.mode))
                affected.insert(owned.app)
            }
        }
        if let app = streams.removeValue(forKey: connection), let i = slots[app] {
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
