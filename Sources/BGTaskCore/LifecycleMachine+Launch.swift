// SPEC §2 sequences 1 and 4: registration, launch, check-in and acknowledgement.
extension LifecycleMachine {
    mutating func register(_ manifest: AppManifest) {
        // One look-up: the slot is found, or made for the record appended below.
        let i = Self.slot(&slots[manifest.id, default: -1], next: records.count)
        if i < records.count {
            records[i].manifest = manifest
            records[i].removed = false
            removals.remove(manifest.id)
        } else {
            if records.count == records.capacity {
                // Grow by a quarter, not double: records are ~300 bytes and there may be 10,000 apps.
                records.reserveCapacity(records.count + records.count / 4 + 16)
            }
            records.append(AppRecord(manifest: manifest, lastUsed: now))
        }
    }

    /// `slot`'s value, set to `next` when it was none (-1).
    private static func slot(_ slot: inout Int, next: Int) -> Int {
        if slot < 0 { slot = next }
        return slot
    }

    /// Registers each manifest in order, the tables grown once for the apps not known yet.
    mutating func register(_ manifests: [AppManifest]) {
        // With no app yet (start-up), every manifest is one (or fewer: an ID given twice): none looked up.
        var added = slots.isEmpty ? manifests.count : 0
        if !slots.isEmpty { for m in manifests where slots[m.id] == nil { added += 1 } }
        if records.count + added > records.capacity { records.reserveCapacity(records.count + added) }
        slots.reserveCapacity(slots.count + added)
        for m in manifests { register(m) }
    }

    mutating func unregister(_ app: AppID) {
        guard let i = slots[app] else { return }
        records[i].removed = true
        if records[i].state == .notRunning, records[i].launch == nil {
            removals.insert(app)
        } else if records[i].termination == nil, !releaseAdopted(i, .manifestRemoved) {
            beginTermination(i, .manifestRemoved, .manifestRemoved)
        }
    }

    /// Drops an app whose manifest is gone, once it has no process. Only called at the end of `handle`,
    /// because it moves another record into the freed slot.
    mutating func forget(_ app: AppID) {
        guard let i = slots[app], records[i].removed, records[i].state == .notRunning, records[i].launch == nil
        else { return }
        cancelAllTimers(i)
        let last = records.count - 1
        if i != last {
            records.swapAt(i, last)
            slots[records[i].id] = i
        }
        records.removeLast()
        slots[app] = nil
    }

    // MARK: - Launch and check-in (SPEC §2 sequences 1 and 4)

    mutating func launchRequested(_ app: AppID, background: Bool, exclusive: Bool) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        guard records[i].termination == nil else { return refuseInState(i) }
        if background {
            if records[i].state == .notRunning, records[i].launch == nil {
                startLaunch(i, .user, foreground: false, cause: .userRequest, work: [])
            }
        } else {
            bringToForeground(i, exclusive: exclusive, reason: .userRequest)
        }
        reply(.ok)
    }

    mutating func startLaunch(_ i: Int, _ reason: LaunchReason, foreground: Bool, cause: Reason, work: [Work]) {
        records[i].launch = PendingLaunch(reason: reason, foreground: foreground, cause: cause, work: work)
        records[i].launchedByDaemon = true
        records[i].lastUsed = now
        let app = records[i].id
        spawnsAwaited.insert(app)
        emit(
            .launch(
                app, reason,
                decision(
                    .launch, cause, i, previous: .notRunning,
                    .launching(foreground: foreground, reason))))
        if records[i].manifest.lifecycleAware {
            deadlines.arm(.launch(app), at: now + nonNegative(config.launchTimeout))
        }
    }

    mutating func appLaunched(_ app: AppID, pid: Int32) {
        spawned[pid] = app
        let awaited = spawnsAwaited.remove(app) != nil
        guard let i = slots[app] else {
            // A fact about an app never launched is ignored; one whose manifest went while the launcher
            // worked is killed: nothing may run unmanaged.
            guard awaited else { return }
            return emit(.kill(app, Processes(pid: pid), Decision(
                kind: .terminate, reason: .manifestRemoved, app: app, pid: pid, severity: .notice,
                detail: .lateLaunchKilled(pid: pid))))
        }
        guard records[i].launch != nil, records[i].state == .notRunning else {
            // Already checked in with this very process: nothing to do. Else the launch was called off (a
            // termination, an unregistration) before the launcher answered: end what it started.
            if records[i].pid == pid { return }
            let reason = records[i].termination?.reason ?? records[i].lastDecision?.reason ?? .launchFailed
            return emit(.kill(app, Processes(pid: pid), Decision(
                kind: .terminate, reason: reason, app: app, state: records[i].state, pid: pid, severity: .notice,
                detail: .lateLaunchKilled(pid: pid))))
        }
        records[i].pid = pid
        records[i].pidIsOwn = true
        if !records[i].manifest.lifecycleAware { finishLaunch(i) }
    }

    /// The launch failed: the app's own cgroup is emptied (a launcher that answered too late may still have
    /// started something there), with the launch-failed decision; an answer for a launch already called
    /// off does the same when the app has no process.
    mutating func launchFailed(_ app: AppID, message: String) {
        let awaited = spawnsAwaited.remove(app) != nil
        guard let i = slots[app] else {
            guard awaited else { return }
            return emit(.kill(app, Processes(pid: nil), Decision(
                kind: .terminate, reason: .manifestRemoved, app: app, severity: .notice, detail: .lateLaunchKilled(pid: nil))))
        }
        guard records[i].launch != nil, records[i].state == .notRunning else {
            if records[i].pid == nil {
                let reason = records[i].termination?.reason ?? records[i].lastDecision?.reason ?? .launchFailed
                emit(.kill(app, Processes(pid: nil), decision(.terminate, reason, i, severity: .notice, .lateLaunchKilled(pid: nil))))
            }
            return
        }
        resetToNotRunning(i)
        emit(.kill(app, Processes(pid: nil), decision(
            .launch, .launchFailed, i, previous: .notRunning, severity: .warning, .launchFailed(error: message))))
    }

    /// Delivers the launch sequence: on check-in for a lifecycle-aware app, at spawn for an unaware one.
    mutating func finishLaunch(_ i: Int) {
        guard let launch = records[i].launch else { return }
        let app = records[i].id
        records[i].launch = nil
        deadlines.cancel(.launch(app))
        records[i].state = .inactive
        deliver(i, .didFinishLaunching, launchReason: launch.reason)
        if launch.foreground {
            records[i].state = .active
            records[i].lastUsed = now
            deliver(i, .didBecomeActive)
        } else {
            // A new process: it has spent no background time yet, so its budget is whole.
            enterBackground(i, freshBudget: true)
        }
        record(
            .launch, launch.cause, i, previous: .notRunning, remaining: remaining(i),
            .launched(foreground: launch.foreground, launch.reason))
        for work in launch.work {
            switch work {
            case .task(let identifier, let kind, let reason):
                if records[i].state.isForeground {
                    // Brought to the foreground while launching for the task: it waits (SPEC §6).
                    records[i].waitingTasks.append(work)
                } else {
                    startTask(i, identifier: identifier, kind: kind, reason: reason)
                }
            case .remoteNotification(let payload):
                startWake(i, payload: payload)
            }
        }
    }

    mutating func checkIn(_ app: AppID, connection: ConnectionID, pid: Int32?, inAdoptedCgroup: Bool, scenes: Bool = false) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        guard records[i].connection == nil, connections.stream(connection) == nil else {
            return reply(.failure(.alreadyCheckedIn))
        }
        guard records[i].termination == nil else { return refuseInState(i) }
        records[i].connection = connection
        records[i].scenes.subscribed = scenes
        connections.setStream(connection, app)
        if let pid {
            records[i].pid = pid
            records[i].pidIsOwn = !inAdoptedCgroup
        }
        // The first reply of the stream carries the state before the launch events that follow it.
        reply(.checkedIn(state: records[i].state))
        if records[i].launch != nil {
            finishLaunch(i)
        } else if records[i].state == .notRunning {
            // Started by hand, not by the daemon: a user launch into the foreground.
            records[i].launch = PendingLaunch(reason: .user, foreground: true, cause: .checkedIn, work: [])
            records[i].launchedByDaemon = false
            finishLaunch(i)
        } else {
            deadlines.cancel(.launch(app))
        }
    }

    mutating func acknowledge(_ event: EventID, caller: Caller) {
        if let app = pendingAcks[event], let i = slots[app], !mayAct(caller, for: i) {
            // issue 11: event ids are small and sequential; only the app's own user (whose processes alone
            // can hold its event stream) or root may acknowledge its events.
            record(.deny, .permissionDenied, i, severity: .warning, .acknowledgeNotAppUser(event: event, caller: caller))
            return reply(.failure(.permissionDenied))
        }
        reply(.ok)
        guard let app = pendingAcks.removeValue(forKey: event), let i = slots[app] else { return }
        if snapshotAcknowledged(i, event) { return }
        if records[i].grace == .awaitingAck(event) {
            records[i].grace = .none
            deadlines.cancel(.grace(app))
            maybeSuspend(i)
        } else if let wake = records[i].wake, wake.event == event {
            endWake(i)
            maybeSuspend(i)
        }
    }
}
