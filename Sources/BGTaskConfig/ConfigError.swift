/// Where a setting came from: a file and a 1-based line number (0 when the problem concerns the whole file).
public struct SourceLocation: Hashable, Sendable, CustomStringConvertible {
    /// The file's path as it was given to the loader.
    public var file: String
    /// 1-based line number; for a continued line, the line where the assignment starts. 0 = the whole file.
    public var line: Int

    public init(file: String, line: Int) {
        self.file = file
        self.line = line
    }

    /// `FILE:LINE`, or `FILE` when the line is 0.
    public var description: String {
        line > 0 ? "\(file):\(line)" : file
    }
}

/// A problem that makes a configuration file or an app manifest unusable.
///
/// Renders as `FILE:LINE: KEY: what is wrong`, or `FILE:LINE: what is wrong` when no key is involved
/// (a syntax error), or `FILE: …` when the problem concerns the whole file.
public struct ConfigError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What is wrong, independent of where.
    public enum Kind: Error, Hashable, Sendable {
        /// A line starting with `[` that is not a well-formed `[Section]` header.
        case invalidSectionHeader(String)
        /// A line that is neither a comment, a section header nor `Key=Value`.
        case missingEquals(String)
        /// A line of the form `=Value`.
        case missingKeyName
        /// A value that is not a systemd time span.
        case invalidTimeSpan(String)
        /// `infinity` where a finite time is required.
        case infiniteTimeSpan
        /// A value that is not a boolean.
        case invalidBoolean(String)
        /// A value that is not a byte size.
        case invalidSize(String)
        /// A value that is not a percentage between 0% and 100%.
        case invalidPercentage(String)
        /// A value that is not a decimal integer.
        case invalidInteger(String)
        /// A value that is not one of a fixed set of words.
        case invalidChoice(String, allowed: [String])
        /// A quoting or escaping error in a command line or word list.
        case invalidQuoting(String)
        /// A required key that is not set.
        case missingRequiredKey
        /// A required section that does not appear.
        case missingSection(String)
        /// The file could not be read.
        case unreadable(String)
        /// The file is not valid UTF-8.
        case invalidEncoding
        /// Any other invalid value; the string says what is wrong.
        case invalid(String)

        /// The human-readable "what is wrong" part of the message.
        public var message: String {
            switch self {
            case .invalidSectionHeader(let line): "invalid section header \(quoted(line))"
            case .missingEquals(let line): "missing '=', not an assignment: \(quoted(line))"
            case .missingKeyName: "missing key name before '='"
            case .invalidTimeSpan(let value): "invalid time span \(quoted(value))"
            case .infiniteTimeSpan: "time span must be finite, \"infinity\" is not allowed here"
            case .invalidBoolean(let value): "invalid boolean \(quoted(value))"
            case .invalidSize(let value): "invalid size \(quoted(value))"
            case .invalidPercentage(let value): "invalid percentage \(quoted(value))"
            case .invalidInteger(let value): "invalid integer \(quoted(value))"
            case .invalidChoice(let value, let allowed):
                "invalid value \(quoted(value)), expected one of: \(allowed.joined(separator: ", "))"
            case .invalidQuoting(let what): what
            case .missingRequiredKey: "required key is missing"
            case .missingSection(let name): "required section [\(name)] is missing"
            case .unreadable(let reason): "cannot read file: \(reason)"
            case .invalidEncoding: "file is not valid UTF-8"
            case .invalid(let what): what
            }
        }
    }

    /// The file and line.
    public var location: SourceLocation
    /// The key concerned, if any.
    public var key: String?
    /// What is wrong.
    public var kind: Kind

    public init(_ kind: Kind, at location: SourceLocation, key: String? = nil) {
        self.kind = kind
        self.location = location
        self.key = key
    }

    /// The file's path.
    public var file: String { location.file }
    /// The 1-based line number (0 = the whole file).
    public var line: Int { location.line }
    /// The "what is wrong" part.
    public var message: String { kind.message }

    public var description: String {
        render(location, key, kind.message)
    }
}

/// Something suspicious that does not stop the configuration from being used (an unknown key or section).
///
/// Renders like ``ConfigError``, e.g. `FILE:LINE: KEY: unknown key, ignored`.
public struct ConfigWarning: Hashable, Sendable, CustomStringConvertible {
    /// What was found.
    public enum Kind: Hashable, Sendable {
        /// A key that the section does not define.
        case unknownKey
        /// A section that the file format does not define; its keys are ignored silently.
        case unknownSection(String)
        /// A `Key=Value` line before any section header.
        case assignmentOutsideSection
        /// A file in a configuration directory that is not loaded (wrong extension).
        case ignoredFile(String)

        /// The human-readable part of the message.
        public var message: String {
            switch self {
            case .unknownKey: "unknown key, ignored"
            case .unknownSection(let name): "unknown section [\(name)], ignored"
            case .assignmentOutsideSection: "assignment outside of any section, ignored"
            case .ignoredFile(let why): why
            }
        }
    }

    /// The file and line.
    public var location: SourceLocation
    /// The key concerned, if any.
    public var key: String?
    /// What was found.
    public var kind: Kind

    public init(_ kind: Kind, at location: SourceLocation, key: String? = nil) {
        self.kind = kind
        self.location = location
        self.key = key
    }

    /// The human-readable part of the message.
    public var message: String { kind.message }

    public var description: String {
        render(location, key, kind.message)
    }
}

private func render(_ location: SourceLocation, _ key: String?, _ message: String) -> String {
    if let key {
        return "\(location): \(key): \(message)"
    }
    return "\(location): \(message)"
}

/// Quotes a user-supplied value for a message, escaping what would make the message ambiguous.
func quoted(_ value: String) -> String {
    var out = "\""
    for scalar in value.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\t": out += "\\t"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        default:
            if scalar.value < 0x20 || scalar.value == 0x7F {
                out += "\\x" + hex2(UInt8(scalar.value))
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }
    return out + "\""
}

private func hex2(_ byte: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
}
