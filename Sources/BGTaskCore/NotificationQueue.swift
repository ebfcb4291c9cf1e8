/// A notification waiting in a suspended app's queue (SPEC §7).
public struct QueuedNotification: Hashable, Sendable, Codable {
    /// The notification's name, the coalescing key.
    public var name: String
    /// The latest payload posted under that name.
    public var payload: Payload?

    /// A queued notification.
    public init(name: String, payload: Payload?) {
        self.name = name
        self.payload = payload
    }
}

/// Notifications posted while an app is suspended, delivered in posting order right after it is next thawed.
///
/// Coalesced by name: posting a name that is already queued replaces its payload (the latest payload wins)
/// and moves it to the end, so the queue is in the order of each name's latest posting. At most `limit`
/// names: posting a new name to a full queue drops the oldest entry.
struct NotificationQueue: Sendable, Codable {
    private(set) var entries: [QueuedNotification] = []

    enum Outcome: Equatable {
        case queued
        case coalesced
        case queuedDroppingOldest(String)
    }

    // Linear in the queue, which holds at most `limit` (64) names.
    mutating func post(name: String, payload: Payload?, limit: Int) -> Outcome {
        if let i = entries.firstIndex(where: { $0.name == name }) {
            entries.remove(at: i)
            entries.append(QueuedNotification(name: name, payload: payload))
            return .coalesced
        }
        entries.append(QueuedNotification(name: name, payload: payload))
        if entries.count > max(1, limit) {
            let dropped = entries.removeFirst()
            return .queuedDroppingOldest(dropped.name)
        }
        return .queued
    }

    mutating func drain() -> [QueuedNotification] {
        defer { entries = [] }
        return entries
    }
}
