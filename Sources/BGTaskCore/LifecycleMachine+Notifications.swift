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

    /// A PSI trigger fired: the episode says whether to warn or to reclaim (SPEC §8), and the same paths as the
    /// requests carry it out (without their reply: a trigger is a fact).
    mutating func memoryPressureTriggered(window: TimeSpan) {
        let response = pressure.triggered(at: now, window: window)
        emit(.memoryPressure(response))
        switch response {
        case .warn: sendMemoryWarnings(nil)
        case .reclaim(let count): reclaimMemory(count: count)
        }
    }

    mutating func memoryWarningRequested(_ target: AppID?) {
        if let target, slots[target] == nil { return reply(.failure(.noSuchApp)) }
        sendMemoryWarnings(target)
        reply(.ok)
    }

    mutating func memoryReclaimRequested(count: Int) {
        reclaimMemory(count: count)
        reply(.ok)
    }

    private mutating func sendMemoryWarnings(_ target: AppID?) {
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
    }

    private mutating func reclaimMemory(count: Int) {
        func victims(_ state: AppState) -> [AppID] {
            records.indices
                .filter { records[$0].state == state && records[$0].termination == nil }
                .sorted { (records[$0].lastUsed, records[$0].id) < (records[$1].lastUsed, records[$1].id) }
                .map { records[$0].id }
        }
        let suspended = victims(.suspended).prefix(Swift.max(0, count))
        for app in suspended {
            if let i = slots[app] { beginTermination(i, .memoryPressure, .memoryPressure) }
        }
        // SPEC §16: then continued tasks, the least progress first (LifecycleMachine+ContinuedTasks.swift).
        let left = endContinuedTasksForMemory(count: Swift.max(0, count) - suspended.count)
        for app in victims(.background).prefix(left) {
            if let i = slots[app] { beginTermination(i, .memoryPressure, .memoryPressure) }
        }
    }
}

/// The memory-pressure episode (SPEC §8): the first trigger of an episode asks for `memory-warning`; a trigger
/// that follows the previous one within ``calmWindows`` windows means the pressure persists, and one app is
/// terminated per trigger. The kernel fires a trigger at most once per window, so this reclaims at most one
/// app per window.
struct PressureEpisode: Hashable, Sendable, Codable {
    /// Quiet windows after which the next trigger starts a new episode (a new warning).
    static let calmWindows: Int64 = 3
    private(set) var lastTrigger: Instant?
    private(set) var triggersInEpisode = 0

    mutating func triggered(at now: Instant, window: TimeSpan) -> MemoryPressureResponse {
        defer { lastTrigger = now }
        let calm = TimeSpan(microseconds: saturatingMultiply(Swift.max(0, window.microseconds), Self.calmWindows))
        if let last = lastTrigger, now - last <= calm {
            triggersInEpisode += 1
            return .reclaim(count: 1)
        }
        triggersInEpisode = 1
        return .warn
    }
}
