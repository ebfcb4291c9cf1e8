// SPEC §14, system sleep: live background work holds logind's `idle` inhibitor; the daemon sees the
// system go to sleep and come back.
extension LifecycleMachine {
    /// App `i`'s work that must not be cut short by idle sleep, counted: background tasks and manager
    /// holds, running scheduled tasks, continuous-mode activities (live work: any of them).
    func work(_ i: Int) -> IdleWork.Count {
        IdleWork.Count(
            assertions: Int32(records[i].assertions.count), tasks: Int32(records[i].tasks.count),
            activities: Int32(records[i].activities.count))
    }

    /// After an input: the ``Action/inhibitIdle(_:)`` to emit when the set of apps with live work changed.
    /// Every change of an app's work comes with a decision about the app, so only the apps the actions
    /// name are looked at, and the work's sum is kept up to date from them (``idleWork``): no pass over
    /// the apps with live work per call, where each call that gave an app its first task or ended its last
    /// counted them all.
    mutating func idleInhibitionChange(after actions: [Action]) -> Action? {
        if idleWork.perApp.count != idleApps.count { idleWork = countedIdleWork() }
        var changed = false
        for action in actions {
            guard let app = action.decision?.app else { continue }
            let now = slots[app].map(work) ?? IdleWork.Count()
            let at = idleAppsIndex(app)
            let listed = at < idleApps.count && idleApps[at] == app
            if listed { idleWork.total.subtract(idleWork.perApp[at]) }
            if !now.isEmpty {
                idleWork.total.add(now)
                if listed {
                    idleWork.perApp[at] = now
                } else {
                    idleApps.insert(app, at: at)
                    idleWork.perApp.insert(now, at: at)
                    changed = true
                }
            } else if listed {
                idleApps.remove(at: at)
                idleWork.perApp.remove(at: at)
                changed = true
            }
        }
        guard changed else { return nil }
        return .inhibitIdle(idleInhibition)
    }

    /// ``idleWork`` as the records of ``idleApps`` have it.
    func countedIdleWork() -> IdleWork {
        var counted = IdleWork()
        for app in idleApps {
            let count = slots[app].map(work) ?? IdleWork.Count()
            counted.perApp.append(count)
            counted.total.add(count)
        }
        return counted
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

    /// The live work now (`nil`: none): the sum kept in ``idleWork``, or counted when that does not match
    /// ``idleApps`` (a decoded machine before its first input).
    var idleInhibition: IdleInhibition? {
        guard !idleApps.isEmpty else { return nil }
        let total = idleWork.perApp.count == idleApps.count ? idleWork.total : countedIdleWork().total
        return IdleInhibition(
            apps: idleApps.prefix(IdleInhibition.namedLimit), appCount: idleApps.count,
            assertions: Int(total.assertions), tasks: Int(total.tasks), activities: Int(total.activities))
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

/// SPEC §14: the live work of the apps that hold the idle inhibitor, per app and summed
/// (``LifecycleMachine/idleWork``).
struct IdleWork: Sendable {
    struct Count: Sendable, Equatable {
        var assertions: Int32 = 0
        var tasks: Int32 = 0
        var activities: Int32 = 0

        var isEmpty: Bool { assertions == 0 && tasks == 0 && activities == 0 }

        mutating func add(_ other: Count) {
            assertions += other.assertions
            tasks += other.tasks
            activities += other.activities
        }

        mutating func subtract(_ other: Count) {
            assertions -= other.assertions
            tasks -= other.tasks
            activities -= other.activities
        }
    }

    /// Each app's, in ``LifecycleMachine/idleApps``' order.
    var perApp: [Count] = []
    var total = Count()
}
