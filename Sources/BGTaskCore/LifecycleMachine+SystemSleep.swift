// SPEC §14, system sleep: live background work holds logind's `idle` inhibitor; the daemon sees the
// system go to sleep and come back.
extension LifecycleMachine {
    /// Whether app `i` has work that must not be cut short by idle sleep: a background task or manager
    /// hold, a running scheduled task, a continuous-mode activity.
    func hasLiveWork(_ i: Int) -> Bool {
        !records[i].assertions.isEmpty || !records[i].tasks.isEmpty || !records[i].activities.isEmpty
    }

    /// After an input: the ``Action/inhibitIdle(_:)`` to emit when the set of apps with live work changed.
    /// Every change of an app's work comes with a decision about the app, so only the apps the actions
    /// name are looked at (no pass over every app per call).
    mutating func idleInhibitionChange(after actions: [Action]) -> Action? {
        var changed = false
        for action in actions {
            guard let app = action.decision?.app else { continue }
            let live = slots[app].map(hasLiveWork) ?? false
            let at = idleAppsIndex(app)
            let listed = at < idleApps.count && idleApps[at] == app
            if live != listed {
                changed = true
                if live { idleApps.insert(app, at: at) } else { idleApps.remove(at: at) }
            }
        }
        guard changed else { return nil }
        return .inhibitIdle(idleInhibition)
    }

    /// Where `app` is or would go in the sorted ``idleApps`` (binary search).
    func idleAppsIndex(_ app: AppID) -> Int {
        var low = 0
        var high = idleApps.count
        while low < high {
            let mid = (low + high) / 2
            if idleApps[mid] < app { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// The live work now (`nil`: none).
    var idleInhibition: IdleInhibition? {
        guard !idleApps.isEmpty else { return nil }
        var inhibition = IdleInhibition(
            apps: idleApps.prefix(IdleInhibition.namedLimit), appCount: idleApps.count, assertions: 0, tasks: 0, activities: 0)
        for app in idleApps {
            guard let i = slots[app] else { continue }
            inhibition.assertions += records[i].assertions.count
            inhibition.tasks += records[i].tasks.count
            inhibition.activities += records[i].activities.count
        }
        return inhibition
    }

    /// logind's `PrepareForSleep(true)`: one `policy` decision, naming the live work sleep interrupts.
    mutating func systemSleepPreparing() {
        emit(.record(Decision(kind: .policy, reason: .systemSleep, app: nil, detail: .systemSleep(live: idleInhibition))))
    }

    /// logind's `PrepareForSleep(false)`: every app held frozen is checked (something may have thawed it
    /// around the sleep). Deadlines run on the monotonic clock, which stood still during the sleep: the
    /// shell re-arms its timer after this input as after any.
    mutating func systemResumed() {
        for i in records.indices.sorted(by: { records[$0].id < records[$1].id })
        where records[i].state == .suspended && records[i].termination == nil {
            emit(.verifyFrozen(records[i].id, processes(i)))
        }
    }
}
