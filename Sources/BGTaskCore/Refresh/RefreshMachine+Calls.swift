/// The calls that change what refresh does: submissions, `RunTaskNow`, remote-notification wakes and the
/// per-app setting. Each answers the call with a ``RefreshAction/reply(_:)`` or, once the change is
/// saved, with ``RefreshAction/save(_:reply:)``.
extension RefreshMachine {
    /// `SubmitTaskRequest`: checks in ``TaskSchedule/submit(_:for:permissions:)``'s order; a refusal
    /// for a mode not declared or an unavailable refresh is journaled.
    mutating func submit(_ request: TaskRequest, app: AppID, now: RefreshNow, facts: Facts) -> [RefreshAction] {
        guard let manifest = config.apps[app] else { return [.reply(.failure(.noSuchApp(app)))] }
        let permissions = TaskSubmitPermissions(
            permittedIdentifiers: manifest.permittedIdentifiers, backgroundModes: manifest.backgroundModes,
            unavailable: unavailability(app))
        switch state.schedule.submit(request, for: app, permissions: permissions) {
        case .success:
            deniedNotices[app]?[request.identifier] = nil
            return [.save(state, reply: .ok)] + plan(now: now, facts: facts)
        case .failure(.notPermitted(let identifier)):
            return [.reply(.failure(.notPermitted(identifier)))]
        case .failure(.modeNotDeclared(let mode)):
            let subject = RefreshNotice.Subject.submissionRefused(request.kind, identifier: request.identifier, mode: mode)
            return [
                .record(RefreshNotice(kind: .deny, reason: .modeNotDeclared, app: app, state: facts(app)?.state, subject: subject, byCall: true)),
                .reply(.failure(.modeNotDeclared(mode))),
            ]
        case .failure(.unavailable(let reason)):
            let subject = RefreshNotice.Subject.submissionRefused(request.kind, identifier: request.identifier, mode: nil)
            return [
                .record(RefreshNotice(kind: .deny, reason: reason, app: app, state: facts(app)?.state, subject: subject, byCall: true)),
                .reply(.failure(.unavailable(reason.rawValue))),
            ]
        case .failure(.tooManyPendingTaskRequests(let kind)):
            return [.reply(.failure(.tooManyPendingTaskRequests(kind)))]
        }
    }

    /// `RunTaskNow`: a pending request at once, bypassing its date and conditions but not the policy. The
    /// request leaves the pending list only if the lifecycle core will start it now (else its reply says why);
    /// then the call is answered once the file says so too (issue 11). An app in the foreground gets it when
    /// it has entered the background (SPEC §6): until then the request stays pending.
    mutating func runNow(_ app: AppID, identifier: String, now: RefreshNow, facts: Facts) -> [RefreshAction] {
        guard config.apps[app]?.permittedIdentifiers.contains(identifier) == true else {
            return [.reply(.failure(.notPermitted(identifier)))]
        }
        guard let pending = state.schedule.requests(for: app).first(where: { $0.identifier == identifier }) else {
            return [.reply(.failure(.unavailable(RefreshCallError.noPendingRequest)))]
        }
        if let reason = denial(app) ?? (isClosedByUser(app) ? .closedByUser : nil) {
            let subject = RefreshNotice.Subject.taskNotRun(pending.kind, identifier: identifier)
            return [
                .record(RefreshNotice(kind: .deny, reason: reason, app: app, state: facts(app)?.state, subject: subject, byCall: true)),
                .reply(.failure(.unavailable(reason.rawValue))),
            ]
        }
        var run = RefreshRun(app: app, identifier: identifier, kind: pending.kind, reason: .userRequest, answersCall: true)
        guard let f = facts(app), f.lifecycleAware, !f.terminating, !f.runningTasks.contains(identifier),
            !f.waitingTasks.contains(identifier)
        else {
            return [.run(run)]
        }
        if f.holdsTaskUntilBackground {
            awaitingStart[app, default: []].insert(identifier)
            return [.run(run)]
        }
        awaitingStart[app]?.remove(identifier)
        state.schedule.started(identifier, for: app, at: now.wall)
        deniedNotices[app]?[identifier] = nil
        run.saveBeforeReply = true
        return [.run(run)] + plan(now: now, facts: facts)
    }

    /// `WakeForRemoteNotification`: only an app that declares `remote-notification`, only as the policy allows.
    mutating func wake(_ app: AppID, now: RefreshNow, facts: Facts) -> [RefreshAction] {
        guard config.apps[app]?.backgroundModes.contains(.remoteNotification) == true else {
            return [
                .record(RefreshNotice(kind: .deny, reason: .modeNotDeclared, app: app, state: facts(app)?.state, subject: .wakeRefused, byCall: true)),
                .reply(.failure(.modeNotDeclared(.remoteNotification))),
            ]
        }
        if let reason = denial(app) {
            return [
                .record(RefreshNotice(kind: .deny, reason: reason, app: app, state: facts(app)?.state, subject: .wakeRefused, byCall: true)),
                .reply(.failure(.unavailable(reason.rawValue))),
            ]
        }
        // SPEC §16: closed by the user, the bucket's quota, the rate (RefreshMachine+Energy.swift).
        let counted = state.energy.wakes[app]
        if let reason = remoteWakeRefusal(app, now: now, facts: facts) {
            return [
                .record(RefreshNotice(kind: .deny, reason: reason, app: app, state: facts(app)?.state, subject: .wakeRefused, byCall: true)),
                .reply(.failure(.unavailable(reason.rawValue))),
            ]
        }
        return (state.energy.wakes[app] != counted ? [.save(state, reply: nil)] : []) + [.wake(app)]
    }

    /// `SetRefreshPolicy`: the administrator's restriction cannot be turned on by a call.
    mutating func setAppSetting(_ app: AppID, enabled: Bool, now: RefreshNow, facts: Facts) -> [RefreshAction] {
        if enabled && restricted(app) {
            return [
                .record(RefreshNotice(kind: .deny, reason: .restricted, app: app, state: facts(app)?.state, subject: .appSettingRefused, byCall: true)),
                .reply(.failure(.unavailable(Reason.restricted.rawValue))),
            ]
        }
        state.appSettings[app] = enabled
        let notice = RefreshNotice(
            kind: .policy, reason: .userRequest, app: app, state: facts(app)?.state,
            subject: .appSettingSet(enabled: enabled, status: status(for: app)), byCall: true)
        return [.record(notice)] + announceStatusChanges(facts) + [.save(state, reply: .ok)] + plan(now: now, facts: facts)
    }
}
