import BGTaskCore
import BGTaskProtocol

// SPEC §16's part of refresh.json, per app: `closedByUser`, `lastUsedRealtimeUSec`, `wakesRealtimeUSec`.
extension RefreshState {
    /// The apps with an energy entry.
    var energyApps: Set<AppID> {
        energy.closedByUser.union(energy.lastUsed.keys).union(energy.wakes.keys)
    }

    /// Adds the app's energy fields to its entry.
    func addEnergy(of app: AppID, to entry: inout [String: JSON]) {
        if energy.closedByUser.contains(app) { entry["closedByUser"] = .bool(true) }
        if let used = energy.lastUsed[app] { entry["lastUsedRealtimeUSec"] = .int(used.microsecondsSinceEpoch) }
        if let wakes = energy.wakes[app], !wakes.isEmpty {
            entry["wakesRealtimeUSec"] = .array(wakes.map { .int($0.microsecondsSinceEpoch) })
        }
    }

    /// Reads the app's energy fields from its entry.
    mutating func readEnergy(of app: AppID, from entry: [String: JSON]) {
        if entry["closedByUser"]?.boolValue == true { energy.closedByUser.insert(app) }
        if let used = entry["lastUsedRealtimeUSec"]?.intValue {
            energy.lastUsed[app] = RealtimeInstant(microsecondsSinceEpoch: used)
        }
        let wakes = (entry["wakesRealtimeUSec"]?.arrayValue ?? []).compactMap { $0.intValue }
        if !wakes.isEmpty { energy.wakes[app] = wakes.map { RealtimeInstant(microsecondsSinceEpoch: $0) } }
    }
}
