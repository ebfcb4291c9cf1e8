/// The state of one scene (one window of an app, SPEC §15). Raw values are the wire and journal strings.
public enum SceneState: String, CaseIterable, Hashable, Sendable, Codable {
    /// In front and receiving input: the app is `active`.
    case foregroundActive = "foreground-active"
    /// Visible but not receiving input: the app is at least `inactive`.
    case foregroundInactive = "foreground-inactive"
    /// Not visible (minimized, behind another app).
    case background
    /// Gone (its window closed). Only ever reported: a disconnected scene is forgotten.
    case disconnected

    /// Whether the scene keeps its app in the foreground.
    public var isForeground: Bool { self == .foregroundActive || self == .foregroundInactive }
}
