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
            guard records[i].manifest.lifecycleAware else {
                if target != nil {
                    record(.notify, .notLifecycleAware, i, .notificationNotDelivered(name: name))
                }
                continue
            }
            guard records[i].termination == nil, records[i].state != .notRunning else {
                if target != nil {
                    record(.notify, .notRunning, i, .notificationNotDelivered(name: name))
                }
                continue
            }
            if records[i].state == .suspended {
                switch records[i].notifications.post(name: name, payload: payload, limit: config.maxQueuedNotificationsPerApp) {
                case .queued:
                    record(.notify, .notificationQueued, i, .notificationQueued(name: name, replaced: false))
                case .coalesced:
                    record(.notify, .notificationQueued, i, .notificationQueued(name: name, replaced: true))
                case .queuedDroppingOldest(let dropped):
                    record(
                        .notify, .queueFull, i, severity: .warning,
                        .notificationQueuedDroppingOldest(name: name, dropped: dropped))
                }
            } else if deliver(i, .notification, name: name, payload: payload) != nil {
                record(.notify, .notificationPosted, i, .notificationDelivered(name: name))
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
                record(.notify, .memoryPressure, i, .memoryWarningSent)
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
            if let i = slots[app] { beginTermination(i, .memoryPressure, .memoryPressure) }
        }
        reply(.ok)
    }
}
