// SPEC §15: the scenes of an app (LifecycleMachine+Scenes.swift decides with them).

/// A scene's identifier, unique within its app, chosen by whoever reports the scene (`bgtaskd-focus`: one
/// per toplevel; `bgtaskctl`: the user's word). Always valid: 1–64 characters of `A-Za-z0-9._-`, not `.` or
/// `..`, so that it names a file (`<sceneId>.png`) in the app's snapshot directory and nothing else.
public struct SceneID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The identifier as text.
    public let rawValue: String

    /// Validates `rawValue`.
    public init?(_ rawValue: String) {
        guard Self.isValid(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    /// Whether `text` is a well-formed scene identifier.
    public static func isValid(_ text: String) -> Bool {
        guard (1...64).contains(text.utf8.count), text != ".", text != ".." else { return false }
        return AppID.isValid(text)
    }

    public static func < (lhs: SceneID, rhs: SceneID) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { rawValue }
}

/// The scene an event or a decision is about (`sceneId`, `title`, `output` of a scene event).
public struct SceneRef: Hashable, Sendable, Codable {
    /// The scene.
    public var id: SceneID
    /// Its title ("" when none was reported).
    public var title: String
    /// The display it is on, when known.
    public var output: String?

    public init(id: SceneID, title: String = "", output: String? = nil) {
        self.id = id
        self.title = title
        self.output = output
    }
}

/// One scene of an app as the core sees it (the core's part of `AppInfo.scenes`).
public struct SceneSnapshot: Hashable, Sendable {
    /// The scene.
    public var id: SceneID
    /// Its title.
    public var title: String
    /// Its display, when known.
    public var output: String?
    /// Its state (never `disconnected`: such a scene is forgotten).
    public var state: SceneState
}

/// What the core keeps about one scene.
struct SceneRecord: Hashable, Sendable, Codable {
    var ref: SceneRef
    var state: SceneState
    /// When it was last active (the scene brought back by an app-level `Foreground`).
    var lastActive: UInt64 = 0
}

/// A `scene-snapshot` round under way: the events not yet acknowledged, for the background period it is for.
struct SnapshotWait: Hashable, Sendable, Codable {
    var events: [EventID: SceneID]
    var backgroundSince: Instant?
}

/// An app's scenes (SPEC §15), in the order they were first reported.
struct AppScenes: Hashable, Sendable, Codable, DefaultInitializable {
    /// The app checked in with `scenes: true`: it gets scene events and snapshots.
    var subscribed = false
    var list: [SceneRecord] = []
    /// Orders activations (``SceneRecord/lastActive``).
    var activations: UInt64 = 0
    /// The `scene-snapshot` round under way.
    var wait: SnapshotWait?
    /// The background period (its start) whose snapshots were taken: one round per period.
    var takenFor: Instant?

    /// At most this many scenes per app: a reporter gone wrong cannot grow the daemon without bound.
    static let limit = 64

    func index(_ id: SceneID) -> Int? { list.firstIndex { $0.ref.id == id } }

    /// The app state its scenes call for (SPEC §15); `nil` without scenes.
    var derivedState: AppState? {
        if list.isEmpty { return nil }
        if list.contains(where: { $0.state == .foregroundActive }) { return .active }
        if list.contains(where: { $0.state == .foregroundInactive }) { return .inactive }
        return .background
    }
}
