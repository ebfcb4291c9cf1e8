/// A user or group as written in a configuration file: a name to look up, or a numeric id.
public enum Account: Hashable, Sendable, CustomStringConvertible {
    /// A user or group name, resolved at use time (`getpwnam`/`getgrnam`).
    case name(String)
    /// A numeric uid or gid.
    case id(UInt32)

    /// Parses a user or group: decimal digits are an id (0…4294967294, not 65535, as systemd), anything
    /// else must be a valid name: a letter or `_`, then up to 31 letters, digits, `_`, `-` or `.`, and
    /// optionally a final `$`.
    public static func parse(_ text: String) -> Account? {
        if !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }) {
            guard text.count <= 10, let id = UInt32(text), id != 65_535, id != UInt32.max else { return nil }
            return .id(id)
        }
        var body = Substring(text)
        if body.hasSuffix("$") { body = body.dropLast() }
        guard let first = body.first, body.count <= 32,
              first == "_" || (first.isASCII && first.isLetter),
              body.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" || $0 == ".") })
        else { return nil }
        return .name(text)
    }

    /// The name, or the id in decimal.
    public var description: String {
        switch self {
        case .name(let name): name
        case .id(let id): String(id)
        }
    }
}
