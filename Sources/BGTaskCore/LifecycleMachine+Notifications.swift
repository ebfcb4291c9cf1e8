// SPEC §7 and §8: notifications and memory pressure.
extension LifecycleMachine {
    mutating func notificationPosted(name: String, app target: AppID?, payload: Payload?) {
        let targets: [Int]
        if let target {
            guard let i = slots[target] else { return reply(.failure(.noSuchApp)) }
            targets = [i]
        } else {
            targets = records.indices.sorted { records[$0].id < records[$1].id }
        }
        for i in targets {
            let app = records[i].id
            guard records[i].manifest.lifecycleAware else {
                if target != nil {
                    record(.notify, .notLifecycleAware, i, "did not deliver notification \(name) to \(app): it is not lifecycle-aware")
                }
                continue
            }
            guard records[i].termination == nil, records[i].state != .notRunning else {
                if target != nil {
                    record(.notify, .notRunning, i, "did not deliver notification \(name) to \(app): it is not running")
                }
                continue
            }
            if records[i].state == .suspended {
                switch records[i].notifications.post(name: name, payload: payload, limit: config.maxQueuedNotificationsPerApp) {
                case .queued:
                    record(.notify, .notificationQueued, i, "queued notification \(name) for suspended \(app)")
                case .coalesced:
                    record(.notify, .notificationQueued, i, "queued notification \(name) for suspended \(app), replacing the one queued earlier")
                case .queuedDroppingOldest(let dropped):
                    record(
                        .notify, .queueFull, i, severity: .warning,
                        "queued notification \(name) for suspended \(app); its queue was full, dropped the oldest (\(dropped))")
                }
            } else if deliver(i, .notification, name: name, payload: payload) != nil {
                record(.notify, .notificationPosted, i, "delivered notification \(name) to \(app)")
            }
        }
        reply(.ok)
    }

    mutating func memoryWarningRequested(_ target: AppID?) {
        let targets: [Int]
        if let target {
            guard let i = slots[target] else { return reply(.failure(.noSuchApp)) }
            targets = [i]
        } else {
            targets = records.indices.filter { records[$0].state == .background }.sorted { records[$0].id < records[$1].id }
        }
        for i in targets {
            let state = records[i].state
            guard records[i].termination == nil, state != .notRunning, state != .suspended else { continue }
            if deliver(i, .memoryWarning) != nil {
                record(.notify, .memoryPressure, i, "sent memory-warning to \(records[i].id)")
            }
        }
        reply(.ok)
    }

    mutating func memoryReclaimRequested(count: Int) {
        func victims(_ state: AppState) -> [AppID] {
            records.indices
                .filter { records[$0].state == state && records[$0].termination == nil }
                .sorted { (records[$0].lastUsed, records[$0].id) < (records[$1].lastUsed, records[$1].id) }
                .map { records[$0].id }
        }
        for app in (victims(.suspended) + victims(.background)).prefix(Swift.max(0, count)) {
            if let i = slots[app] { beginTermination(i, .memoryPressure, detail: "memory pressure") }
        }
        reply(.ok)
    }
}
