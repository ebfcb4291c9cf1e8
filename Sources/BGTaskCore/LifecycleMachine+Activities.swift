// SPEC §4: continuous background activities.
extension LifecycleMachine {
    mutating func activityRequested(_ app: AppID, connection: ConnectionID, mode: BackgroundMode) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        func deny(_ reason: Reason, _ error: CoreError) {
            record(.deny, reason, i, severity: .notice, .activityDenied(mode))
            reply(.failure(error))
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
        let activity = ActivityID(nextActivityNumber)
        nextActivityNumber += 1
        activityTable[activity] = ActivityRecord(
            id: activity, app: records[i].id, connection: connection, mode: mode, begun: now)
        records[i].activities.append(activity)
        holdings[connection, default: Holdings()].activities.insert(activity)
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
        guard let record = activityTable.removeValue(forKey: activity) else { return }
        if let i = slots[record.app] { records[i].activities.removeAll { $0 == activity } }
        holdings[record.connection]?.activities.remove(activity)
        if holdings[record.connection]?.isEmpty == true { holdings[record.connection] = nil }
    }
}
