// SPEC §4: continuous background activities.

/// The live activities; only this file touches its storage.
struct ActivityTable: Sendable, Codable {
    fileprivate var records: [ActivityID: ActivityRecord] = [:]
    fileprivate var next: UInt64 = 1

    /// The live activity `id`.
    subscript(id: ActivityID) -> ActivityRecord? { records[id] }

    /// Begins an activity with the next identifier.
    mutating func begin(app: AppID, connection: ConnectionID, mode: BackgroundMode, at begun: Instant) -> ActivityID {
        let id = ActivityID(next)
        next += 1
        records[id] = ActivityRecord(id: id, app: app, connection: connection, mode: mode, begun: begun)
        return id
    }

    /// Ends it; `nil` when it was not live.
    mutating func remove(_ id: ActivityID) -> ActivityRecord? { records.removeValue(forKey: id) }
}
extension LifecycleMachine {
    mutating func activityRequested(_ app: AppID, connection: ConnectionID, mode: BackgroundMode) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        func deny(_ reason: Reason, _ error: CoreError) {
            record(.deny, reason, i, severity: .notice, .activityDenied(mode))
            if error == .invalidState { refuseInState(i) } else { reply(.failure(error)) }
        }
        guard records[i].manifest.backgroundModes.contains(mode) else {
            return deny(.modeNotDeclared, .modeNotDeclared)
        }
        guard mode.isContinuous else {
            return deny(.modeNotContinuous, .modeNotContinuous)
        }
        if records[i].termination != nil { return deny(.terminating, .invalidState) }
        if records[i].state == .notRunning { return deny(.notRunning, .invalidState) }
        if records[i].state == .suspended { resumeHeld(i, reason: .activityHeld) }
        let activity = activityTable.begin(app: records[i].id, connection: connection, mode: mode, at: now)
        records[i].activities.append(activity)
        connections.hold(activity, on: connection)
        record(.grant, .appRequest, i, activityID: activity, .activityGranted(mode))
        reply(.activityID(activity))
    }

    mutating func activityEndRequested(_ app: AppID, _ activity: ActivityID) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        guard let record = activityTable[activity], record.app == app else {
            self.record(
                .end, .unknownIdentifier, i, activityID: activity, severity: .warning,
                .unknownActivityEnded)
            return reply(.ok)
        }
        releaseActivity(activity)
        self.record(.end, .appRequest, i, activityID: activity, .activityEnded(record.mode))
        reply(.ok)
        maybeSuspend(i)
    }

    mutating func releaseActivity(_ activity: ActivityID) {
        guard let record = forgetActivity(activity), let i = slots[record.app] else { return }
        records[i].activities.removeFirstOccurrence(of: activity)
    }

    /// Forgets `activity` everywhere but its app's list (see `forgetAssertion`).
    @discardableResult
    mutating func forgetActivity(_ activity: ActivityID) -> ActivityRecord? {
        guard let record = activityTable.remove(activity) else { return nil }
        connections.release(activity, on: record.connection)
        return record
    }
}
