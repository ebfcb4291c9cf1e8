import BGTaskCore
import BGTaskProtocol

// SPEC §16's part of refresh.json, per app: `closedByUser`, `lastUsedRealtimeUSec`, `wakesRealtimeUSec`
// (written by `RefreshState.bytes()`).
extension RefreshState {
    /// The apps with an energy entry.
    var energyApps: Set<AppID> {
        energy.closedByUser.union(energy.lastUsed.keys).union(energy.wakes.keys)
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
