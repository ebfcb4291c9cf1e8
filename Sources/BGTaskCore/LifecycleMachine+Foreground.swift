// SPEC §2 sequences 2, 3 and 6: foreground, background, interruption; the grace window and the budget armed.
extension LifecycleMachine {
    mutating func foregroundRequested(_ app: AppID, exclusive: Bool) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        guard records[i].termination == nil else { return refuseInState(i) }
        bringToForeground(i, exclusive: exclusive, reason: .userRequest)
        reply(.ok)
    }

    mutating func bringToForeground(_ i: Int, exclusive: Bool, reason: Reason) {
        if exclusive {
            // The state first (a byte), the identifier compared by index: no string compared per app.
            var others: [AppID] = []
            for j in records.indices where j != i && records[j].state.isForeground && records[j].termination == nil {
                others.append(records[j].id)
            }
            if others.count > 1 { others.sort() }
            for other in others {
                if let j = slots[other] { sendToBackground(j, reason: .anotherAppForeground) }
            }
        }
        switch records[i].state {
        case .notRunning:
            if records[i].launch != nil {
                records[i].launch?.foreground = true
            } else {
                startLaunch(i, .user, foreground: true, cause: reason, work: [])
            }
        case .active:
            break
        case .inactive:
            bringLastSceneForward(i)
            records[i].interrupted = false
            records[i].state = .active
            records[i].lastUsed = now
            deliver(i, .didBecomeActive)
            record(.foreground, reason, i, previous: .inactive, .becameActive)
        case .background:
            leaveBackgroundForDevice(i)
            enterForeground(i, reason: reason, previous: .background)
        case .suspended:
            leaveBackgroundForDevice(i)
            thaw(i, reason: reason)
            enterForeground(i, reason: reason, previous: .suspended)
        }
    }

    /// Sequence 3 from a running background app: `will-enter-foreground`, `did-become-active`.
    mutating func enterForeground(_ i: Int, reason: Reason, previous: AppState) {
        let app = records[i].id
        bringLastSceneForward(i)
        clearGrace(i)
        deadlines.cancel(.budgetWarning(app))
        deadlines.cancel(.budgetEnd(app))
        records[i].backgroundSince = nil
        // The budget resets in the foreground, and with it the warnings.
        for task in records[i].assertions { assertionTable.setWarned(task, false) }
        records[i].state = .inactive
        deliver(i, .willEnterForeground)
        records[i].state = .active
        records[i].lastUsed = now
        deliver(i, .didBecomeActive)
        record(.foreground, reason, i, previous: previous, .cameToForeground)
    }

    mutating func backgroundRequested(_ app: AppID) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        guard records[i].termination == nil else { return refuseInState(i) }
        switch records[i].state {
        case .active, .inactive:
            sendToBackground(i, reason: .userRequest)
        case .background, .suspended:
            break
        case .notRunning:
            guard records[i].launch != nil else { return refuseInState(i) }
            records[i].launch?.foreground = false
        }
        reply(.ok)
    }

    /// Sequence 2: `will-resign-active` (if active), `did-enter-background`.
    mutating func sendToBackground(_ i: Int, reason: Reason) {
        let previous = records[i].state
        switch previous {
        case .active:
            sendScenesToBackground(i)
            records[i].state = .inactive
            deliver(i, .willResignActive)
        case .inactive:
            break
        case .notRunning, .background, .suspended:
            return
        }
        sendScenesToBackground(i)
        records[i].interrupted = false
        records[i].leftForeground = now
        enterBackground(i, freshBudget: true)
        record(
            .background, reason, i, previous: previous, remaining: remaining(i),
            .wentToBackground(budget: nonNegative(config.backgroundTimeBudget)))
        startWaitingTasks(i)
    }

    /// Enters the background: `did-enter-background` to acknowledge within the grace window. `freshBudget`:
    /// the budget counts from now (the app left the foreground, or is a new process launched into the
    /// background); otherwise it keeps counting from when the app entered the background (SPEC §3: a resume
    /// for an event runs on the event's own budget and leaves the app's as it was).
    mutating func enterBackground(_ i: Int, freshBudget: Bool) {
        let app = records[i].id
        records[i].state = .background
        if freshBudget || records[i].backgroundSince == nil { records[i].backgroundSince = now }
        let graceEnd = now + nonNegative(config.didEnterBackgroundTimeout)
        if records[i].manifest.lifecycleAware {
            let event = deliver(i, .didEnterBackground, needsAck: true, deadline: graceEnd)
            records[i].grace = .awaitingAck(event)
            if let event { pendingAcks[event] = app }
        } else {
            records[i].grace = .window
        }
        deadlines.arm(.grace(app), at: graceEnd)
        armBudget(i)
    }

    /// Arms the budget's warning and end (again: a resume, a manager hold that ended, a reload). A budget
    /// already over warns nothing (a deadline in the past would fire at its own, earlier instant); its end
    /// comes at once for assertions still live (they outlived a manager hold, or a reload shortened the
    /// budget), and not at all without any (none can be begun: `budget-exhausted`).
    mutating func armBudget(_ i: Int) {
        guard let since = records[i].backgroundSince else { return }
        let app = records[i].id
        let end = since + nonNegative(config.backgroundTimeBudget)
        guard end > now else {
            deadlines.cancel(.budgetWarning(app))
            if records[i].assertions.isEmpty {
                deadlines.cancel(.budgetEnd(app))
            } else {
                deadlines.arm(.budgetEnd(app), at: now)
            }
            return
        }
        deadlines.arm(.budgetWarning(app), at: Swift.max(now, end - nonNegative(config.expirationWarning)))
        deadlines.arm(.budgetEnd(app), at: end)
    }

    mutating func interruptionBegan(_ app: AppID) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        guard records[i].termination == nil else { return refuseInState(i) }
        switch records[i].state {
        case .active:
            resignActiveScenes(i)
            records[i].state = .inactive
            records[i].interrupted = true
            deliver(i, .willResignActive)
            record(.foreground, .interruption, i, previous: .active, .interrupted)
            reply(.ok)
        case .inactive where records[i].interrupted:
            reply(.ok)
        default:
            refuseInState(i)
        }
    }

    mutating func interruptionEnded(_ app: AppID) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        guard records[i].termination == nil else { return refuseInState(i) }
        switch records[i].state {
        case .inactive where records[i].interrupted:
            bringLastSceneForward(i)
            records[i].interrupted = false
            records[i].state = .active
            records[i].lastUsed = now
            deliver(i, .didBecomeActive)
            record(.foreground, .interruptionEnded, i, previous: .inactive, .interruptionEnded)
            reply(.ok)
        case .active:
            reply(.ok)
        default:
            refuseInState(i)
        }
    }
}
