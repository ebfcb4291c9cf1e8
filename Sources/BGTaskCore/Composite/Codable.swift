// The coding of the core's inputs for record and replay (SPEC §17): identifiers and times as their plain
// values. The enums and structs of the inputs are coded by synthesis (their declarations say `Codable`).

/// An identifier coded as its text, refused when the text is not well formed.
public protocol TextIdentifierCodable: Codable {
    init?(_ text: String)
    var rawValue: String { get }
    /// What the identifier is, for the coding error ("an app ID").
    static var codingName: String { get }
}

extension TextIdentifierCodable {
    /// A well-formed identifier, else a coding error naming the text.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = Self(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not \(Self.codingName): \(text)"))
        }
        self = id
    }

    /// The identifier's text.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(rawValue)
    }
}

extension AppID: TextIdentifierCodable {
    public static var codingName: String { "an app ID" }
}

extension SceneID: TextIdentifierCodable {
    public static var codingName: String { "a scene ID" }
}

extension TaskID: Codable {}
extension ActivityID: Codable {}
extension ConnectionID: Codable {}
extension EventID: Codable {}
extension InstanceID: Codable {}
extension RequestID: Codable {}

extension Instant: Codable {
    /// Microseconds on the monotonic clock.
    public init(from decoder: any Decoder) throws {
        self.init(microseconds: try decoder.singleValueContainer().decode(Int64.self))
    }

    /// Microseconds on the monotonic clock.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(microseconds)
    }
}

extension TimeSpan: Codable {
    /// Microseconds.
    public init(from decoder: any Decoder) throws {
        self = .microseconds(try decoder.singleValueContainer().decode(Int64.self))
    }

    /// Microseconds.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(microseconds)
    }
}

extension RealtimeInstant: Codable {
    /// Microseconds since the epoch.
    public init(from decoder: any Decoder) throws {
        self.init(microsecondsSinceEpoch: try decoder.singleValueContainer().decode(Int64.self))
    }

    /// Microseconds since the epoch.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(microsecondsSinceEpoch)
    }
}
