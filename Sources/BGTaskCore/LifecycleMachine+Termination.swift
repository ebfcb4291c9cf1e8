// SPEC §2 sequence 7: termination and its escalation, exits, the daemon stopping.
extension LifecycleMachine {
    mutating func terminateRequested(_ app: AppID) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        if records[i].termination != nil { return reply(.ok) }
        // An idempotent stop, as systemd's StopUnit: an app that is not running (nor launching) is
        // already where the request wants it; nothing is decided.
        guard records[i].state != .notRunning || records[i].launch != nil else { return reply(.ok) }
        beginTermination(i, .userRequest, .requested)
        reply(.ok)
    }

    mutating func beginTermination(_ i: Int, _ reason: Reason, _ cause: TerminationCause) {
        let app = records[i].id
        let previous = records[i].state
        if config.dryRun, records[i].pid != nil || !records[i].instances.isEmpty {
            // A dry run: the decision is recorded as it would be taken, but nothing is signalled and the app
            // keeps its process and its state (listed as it still is).
            record(
                .terminate, reason, i, previous: previous, severity: .notice,
                .sigtermSent(cause, killIn: nonNegative(config.killTimeout)))
            return
        }
        // Only the escalation counts from now on.
        cancelAllTimers(i)
        clearGrace(i)
        endWake(i)
        records[i].tasks = [:]
        if previous == .notRunning {
            records[i].launch = nil
            if records[i].pid == nil {
                // Never spawned (or never reported): nothing to signal, the launch is just cancelled.
                emit(.kill(app, processes(i), decision(.terminate, reason, i, previous: previous, severity: .notice, .launchCancelled(cause))))
                resetToNotRunning(i)
                return
            }
        }
        records[i].launch = nil
        if previous == .suspended {
            records[i].termination = Termination(reason: reason, phase: .killed)
            emit(.kill(app, processes(i), decision(.terminate, reason, i, previous: previous, severity: .notice, .killedSuspended(cause))))
            return
        }
        if records[i].manifest.lifecycleAware, records[i].connection != nil {
            let deadline = now + nonNegative(config.willTerminateTimeout)
            records[i].termination = Termination(reason: reason, phase: .willTerminate)
            deliver(i, .willTerminate, deadline: deadline)
            record(
                .terminate, reason, i, previous: previous, severity: .notice,
                .willTerminateSent(cause, sigtermIn: nonNegative(config.willTerminateTimeout)))
            deadlines.arm(.escalation(app), at: deadline)
        } else {
            records[i].termination = Termination(reason: reason, phase: .sigterm)
            emit(
                .terminate(
                    app, processes(i),
                    decision(
                        .terminate, reason, i, previous: previous, severity: .notice,
                        .sigtermSent(cause, killIn: nonNegative(config.killTimeout)))))
            deadlines.arm(.escalation(app), at: now + nonNegative(config.killTimeout))
        }
    }

    mutating func escalate(_ i: Int) {
        guard let termination = records[i].termination else { return }
        let app = records[i].id
        switch termination.phase {
        case .willTerminate:
            records[i].termination?.phase = .sigterm
            emit(
                .terminate(
                    app, processes(i),
                    decision(
                        .terminate, termination.reason, i, severity: .notice,
                        .noExitAfterWillTerminate(within: nonNegative(config.willTerminateTimeout)))))
            deadlines.arm(.escalation(app), at: now + nonNegative(config.killTimeout))
        case .sigterm:
            records[i].termination?.phase = .killed
            emit(
                .kill(
                    app, processes(i),
                    decision(
                        .terminate, termination.reason, i, severity: .notice,
                        .noExitAfterSigterm(within: nonNegative(config.killTimeout)))))
        case .killed:
            break
        }
    }

    mutating func processExited(_ app: AppID, pid: Int32?) {
        let wasSpawned = pid.flatMap { spawned.removeValue(forKey: $0) } != nil
        guard let i = slots[app] else {
            // Forgotten meanwhile (its launch called off, its manifest gone): its cgroup still goes.
            if wasSpawned { emit(.release(app)) }
            return
        }
        if let pid, let current = records[i].pid, pid != current { return }
        let r = records[i]
        guard r.state != .notRunning || r.launch != nil || r.termination != nil else {
            if r.pid == nil { emit(.release(app)) }
            return
        }
        let previous = records[i].state
        let oldPID = records[i].pid
        let termination = records[i].termination
        let held = records[i].assertions.count + records[i].activities.count
        resetToNotRunning(i)
        emit(
            .record(
                Decision(
                    kind: .terminate, reason: termination?.reason ?? .appExited, app: app, state: .notRunning,
                    previousState: previous, pid: oldPID, severity: termination == nil ? .notice : .info,
                    detail: .exited(terminated: termination != nil, released: held))))
        emit(.release(app))
    }

    /// Forgets everything about the app's process: assertions, activities, tasks, queue, timers.
    mutating func resetToNotRunning(_ i: Int) {
        let app = records[i].id
        // A process that is gone counts as stopped: a suspension not yet confirmed is recorded before the exit.
        flushHeldSuspend(i)
        cancelAllTimers(i)
        clearGrace(i)
        endWake(i)
        // The lists go with the record (replaced below): each entry is forgotten everywhere else.
        for task in records[i].assertions { forgetAssertion(task) }
        for activity in records[i].activities { forgetActivity(activity) }
        if let connection = records[i].connection { _ = connections.removeStream(connection) }
        var fresh = AppRecord(manifest: records[i].manifest, lastUsed: records[i].lastUsed)
        fresh.lastDecision = records[i].lastDecision
        fresh.removed = records[i].removed
        fresh.instances = records[i].instances
        records[i] = fresh
        if fresh.removed { removals.insert(app) }
    }

    /// SIGTERM: terminates every app the daemon started (SPEC §9); apps that checked in by themselves are left.
    mutating func stopRequested() {
        if !stopping {
            stopping = true
            let limit = nonNegative(config.willTerminateTimeout) + nonNegative(config.killTimeout)
                + nonNegative(config.killTimeout) + .seconds(1)
            deadlines.arm(.stopLimit, at: now + limit)
        }
        for i in records.indices.sorted(by: { records[$0].id < records[$1].id }) {
            let r = records[i]
            guard r.launchedByDaemon, r.termination == nil, r.state != .notRunning || r.launch != nil else { continue }
            beginTermination(i, .daemonStopping, .daemonStopping)
        }
        if config.dryRun {
            // Nothing was signalled: the stop does not wait for exits that will not come.
            stopping = false
            deadlines.cancel(.stopLimit)
            emit(.stopFinished(unexited: appsStartedByDaemon))
        }
    }
}
