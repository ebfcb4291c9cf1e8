import BGTaskCore
import BGTaskProtocol

// SPEC §16's part of refresh.json, per app: `closedByUser`, `lastUsedRealtimeUSec`, `wakesRealtimeUSec`
// (written by `RefreshState.bytes()`).
extension RefreshState {
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
