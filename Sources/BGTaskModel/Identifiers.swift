/// The identifier of an application, as written in its manifest's `ID=` key (reverse-DNS, e.g. `org.example.Mail`).
///
/// Always valid: 1–255 characters from `A-Z a-z 0-9 . _ -`. Build one with the failable ``init(_:)``.
public struct AppID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The identifier as text.
    public let rawValue: String

    /// Validates `rawValue`; returns `nil` unless it is 1–255 characters of `A-Za-z0-9._-`.
    public init?(_ rawValue: String) {
        guard Self.isValid(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    /// Whether `text` is a well-formed application identifier.
    public static func isValid(_ text: String) -> Bool {
        // On the contiguous bytes: every call names its app, and a walk of the `utf8` view cost ~500
        // instructions of a call's ~45,000 (bench/README.md, "Rows 1 and 2b under callgrind").
        var text = text
        return text.withUTF8 { bytes in
            guard (1...255).contains(bytes.count) else { return false }
            for byte in bytes {
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                    continue
                default:
                    return false
                }
            }
            return true
        }
    }

    /// Orders identifiers by their text, so every listing is deterministic.
    public static func < (lhs: AppID, rhs: AppID) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The identifier as text.
    public var description: String { rawValue }
}

/// A background-task assertion's identifier (`taskId` on the wire). `0` is ``invalid``: a denied request.
public struct TaskID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    /// The number on the wire.
    public let rawValue: UInt64
    /// Wraps a wire number.
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    /// Wraps a wire number.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    /// A literal identifier (tests, examples).
    public init(integerLiteral value: UInt64) { self.rawValue = value }
    /// The invalid identifier `0`, returned when a begin request is denied (UIKit's `.invalid`).
    public static let invalid = TaskID(0)
    /// Whether this is a real identifier (not ``invalid``).
    public var isValid: Bool { rawValue != 0 }
    /// Identifiers are issued in increasing order, so this is also the order in which assertions were begun.
    public static func < (lhs: TaskID, rhs: TaskID) -> Bool { lhs.rawValue < rhs.rawValue }
    /// The number as text.
    public var description: String { String(rawValue) }
}

/// A background-mode activity's identifier (`activityId` on the wire). Issued from 1 upwards.
public struct ActivityID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    /// The number on the wire.
    public let rawValue: UInt64
    /// Wraps a wire number.
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    /// Wraps a wire number.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    /// A literal identifier (tests, examples).
    public init(integerLiteral value: UInt64) { self.rawValue = value }
    /// Orders by issue order.
    public static func < (lhs: ActivityID, rhs: ActivityID) -> Bool { lhs.rawValue < rhs.rawValue }
    /// The number as text.
    public var description: String { String(rawValue) }
}

/// A client connection, numbered by the shell. Assertions and activities live no longer than their connection.
public struct ConnectionID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The shell's number for the connection.
    public let rawValue: UInt64
    /// Wraps the shell's number.
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    /// Wraps the shell's number.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    /// Orders by number.
    public static func < (lhs: ConnectionID, rhs: ConnectionID) -> Bool { lhs.rawValue < rhs.rawValue }
    /// The number as text.
    public var description: String { String(rawValue) }
}

/// An event delivered to an app (`Event.id` on the wire, the argument of `Acknowledge`). Issued from 1 upwards.
public struct EventID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    /// The number on the wire.
    public let rawValue: UInt64
    /// Wraps a wire number.
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    /// Wraps a wire number.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    /// A literal identifier (tests, examples).
    public init(integerLiteral value: UInt64) { self.rawValue = value }
    /// Orders by issue order.
    public static func < (lhs: EventID, rhs: EventID) -> Bool { lhs.rawValue < rhs.rawValue }
    /// The number as text.
    public var description: String { String(rawValue) }
}
