/// Planning (SPEC §6): what is due runs, what is due but denied is journaled once, and the wall-clock
/// timer is armed for the earliest date at which a waiting request may become due by itself.
extension RefreshMachine {
    /// The scheduling context at `now`: conditions, the configured intervals and how long no app has been
    /// in the foreground (monotonic).
    func context(_ now: RefreshNow) -> TaskSchedulingContext {
        let idleFor: TimeSpan? = foregroundApps.isEmpty ? now.monotonic - (foregroundEnded ?? now.monotonic) : nil
        return TaskSchedulingContext(
            now: now.wall, conditions: conditions, minimumRefreshInterval: config.minimumRefreshInterval,
            processingIdle: config.processingIdle, idleFor: idleFor)
    }

    /// Runs what is due, journals what is due but denied, saves if a request left, arms the timer.
    mutating func plan(now: RefreshNow, facts: Facts) -> [RefreshAction] {
        plans += 1
        // Requests the core no longer holds (their app ended before its background) wait for nothing now.
        if !awaitingStart.isEmpty {
            var still: [AppID: Set<String>] = [:]
            for (app, identifiers) in awaitingStart {
                let held = identifiers.intersection(facts(app)?.waitingTasks ?? [])
                if !held.isEmpty { still[app] = held }
            }
            awaitingStart = still
        }
        let ctx = context(now)
        let policy = self.policy, config = self.config, appSettings = state.appSettings
        var plan = state.schedule.plan(context: ctx) { app in
            policy.denial(
                enabled: RefreshPolicy.appSetting(
                    runTime: appSettings[app], manifest: config.apps[app]?.setting, defaultSetting: config.defaultAppRefresh),
                restricted: config.apps[app]?.restricted ?? false)
        }
        // SPEC §16: closed by the user, bucket quotas (RefreshMachine+Energy.swift).
        let quotaFrees = holdBack(&plan, now: ctx.now, facts: facts)
        if let quotaFrees { plan.nextWake = plan.nextWake.map { Swift.min($0, quotaFrees) } ?? quotaFrees }
        plan.nextWake = aligned(plan.nextWake)
        var actions: [RefreshAction] = []
        var watch = plan.waitsForIdle
        var changed = false
        for run in plan.runs {
            let app = run.app, request = run.request
            // An app whose manifest is gone keeps its requests for when it comes back.
            guard config.apps[app] != nil, let f = facts(app) else { continue }
            if f.terminating || f.runningTasks.contains(request.identifier) {
                watch = true
                continue
            }
            // Held by the core until the app has entered the background (awaitingStart: looked at again
            // when the app leaves the foreground).
            if f.waitingTasks.contains(request.identifier) { continue }
            let run = RefreshRun(app: app, identifier: request.identifier, kind: request.kind, reason: .taskScheduled)
            if f.holdsTaskUntilBackground {
                // The core holds it until the app has entered the background; it stays pending until it
                // starts, and an app that ends first leaves it here to run later.
                awaitingStart[app, default: []].insert(request.identifier)
                actions.append(.run(run))
                continue
            }
            awaitingStart[app]?.remove(request.identifier)
            state.schedule.started(request.identifier, for: app, at: ctx.now)
            changed = true
            actions.append(.run(run))
        }
        var notices: [AppID: [String: Reason]] = [:]
        for denial in plan.denials where config.apps[denial.task.app] != nil {
            let app = denial.task.app, request = denial.task.request
            notices[app, default: [:]][request.identifier] = denial.reason
            guard deniedNotices[app]?[request.identifier] != denial.reason else { continue }
            actions.append(
                .record(
                    RefreshNotice(
                        kind: .deny, reason: denial.reason, app: app, state: facts(app)?.state,
                        subject: .taskNotRun(request.kind, identifier: request.identifier), byCall: false)))
        }
        deniedNotices = notices
        watchLifecycle = watch
        if changed { actions.append(.save(state, reply: nil)) }
        if plan.nextWake != nextWallDeadline {
            nextWallDeadline = plan.nextWake
            actions.append(.armWallTimer(plan.nextWake))
        }
        return actions
    }
}
