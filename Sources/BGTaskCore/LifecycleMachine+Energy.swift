// SPEC §16: processing tasks yield to the user.
extension LifecycleMachine {
    /// Whether `actions` made some app active (the user started using the device).
    static func someAppBecameActive(_ actions: ArraySlice<Action>) -> Bool {
        actions.contains { action in
            guard let d = action.decision, d.state == .active, let previous = d.previousState else { return false }
            return previous != .active
        }
    }

    /// An app became active: every running processing task of an app not in the foreground gets
    /// `background-task-will-expire` now (decision `expire`, reason `another-app-foreground`) and must be
    /// completed within `ExpirationWarningSec`, else its app is terminated (`task-not-completed`), as at
    /// the end of its budget. Refresh tasks are left alone; a task already warned keeps its end.
    mutating func yieldProcessingTasks() {
        // Only the apps given tasks are looked at, in the records' order (looking at every app cost ~10 µs
        // per launch at 10,000 apps); those that have none left are dropped from the set here.
        var candidates: [Int] = []
        if let given = appsGivenTasks {
            for app in given {
                if let i = slots[app], !records[i].tasks.isEmpty {
                    candidates.append(i)
                } else {
                    appsGivenTasks?.remove(app)
                }
            }
            candidates.sort()
        } else {
            candidates = records.indices.filter { !records[$0].tasks.isEmpty }
            appsGivenTasks = Set(candidates.map { records[$0].id })
        }
        for i in candidates where records[i].termination == nil && !records[i].state.isForeground {
            let app = records[i].id
            for identifier in records[i].tasks.keys.sorted() {
                guard let run = records[i].tasks[identifier], run.kind == .processing, !run.warned else { continue }
                let end = Swift.min(run.deadline, now + nonNegative(config.expirationWarning))
                records[i].tasks[identifier]?.warned = true
                records[i].tasks[identifier]?.deadline = end
                deadlines.cancel(.taskWarning(app, identifier))
                deadlines.arm(.taskEnd(app, identifier), at: end)
                deliver(i, .backgroundTaskWillExpire, identifier: identifier, deadline: end)
                record(
                    .expire, .anotherAppForeground, i, taskName: identifier, remaining: nonNegative(end - now),
                    .taskExpiring(.processing, in: nonNegative(end - now)))
            }
        }
    }
}
