/// A continuous background mode an activity can hold (SPEC §4); the manifest must declare it.
public struct BackgroundMode: RawRepresentable, Hashable, Sendable {
    /// The mode's name in `BackgroundModes=` and on the wire.
    public let rawValue: String
    /// A mode by its wire name.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Playing audio.
    public static let audio = BackgroundMode(rawValue: "audio")
    /// Tracking location.
    public static let location = BackgroundMode(rawValue: "location")
    /// Voice over IP.
    public static let voip = BackgroundMode(rawValue: "voip")
    /// Talking to an external accessory.
    public static let externalAccessory = BackgroundMode(rawValue: "external-accessory")
    /// Talking to a Bluetooth device.
    public static let bluetooth = BackgroundMode(rawValue: "bluetooth")
}

/// An activity of a background mode (`activityId`).
public struct BackgroundActivityIdentifier: RawRepresentable, Hashable, Sendable {
    /// The daemon's `activityId`.
    public let rawValue: Int
    /// Wraps an `activityId`.
    public init(rawValue: Int) { self.rawValue = rawValue }
}
