public import BGTaskModel

// The typed wire contract (issue 13): every method of bgtaskd's interfaces is a case of a method enum
// (`AppMethod`, `ManagerMethod`, `ServiceMethod`) whose raw value is its Varlink name, with a parameter
// struct and a reply struct that encode to and decode from `JSON`; every error is a case of an error
// enum (`AppError`, `ManagerError`). All of them are generated from the interfaces' .varlink files
// (scripts/gen-varlink.py, Generated/): method names and parameter keys are spelled there and nowhere
// else. The daemon decodes calls into these structs and encodes replies from them, the client library and
// bgtaskctl build their calls and read their replies with them. This file holds what the generated code
// stands on: the protocols, the readers and writers of fields.

/// A field that does not fit its declaration: the call's `InvalidParameter`, or a reply the client
/// cannot read.
public struct WireFieldError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The field's name (the outermost parameter it is in).
    public let field: String
    public init(_ field: String) { self.field = field }
    public var description: String { "invalid field \(field)" }
    /// `org.varlink.service.InvalidParameter` naming the field.
    public var varlinkError: VarlinkError { .invalidParameter(field) }
}

/// A struct of the wire: a method's parameters or reply, or a `type` of an interface.
public protocol WireMessage: Sendable, Equatable {
    /// Field names in the order the interface description declares them.
    static var fields: [String] { get }
    /// Reads the struct from its JSON object; the first field that does not fit is the error.
    init(json: [String: JSON]) throws(WireFieldError)
    /// The struct as a JSON object (the daemon's bytes: absent optionals left out or null, per field).
    var json: [String: JSON] { get }
    /// Appends the JSON text of `json` (keys sorted, as `JSON.write`); the replies of the common calls
    /// write it from preformatted parts, without building the object.
    func write(into out: inout [UInt8])
    /// About how many bytes `write(into:)` appends, when that is large (0: unknown or small): the
    /// buffer is grown once to it instead of doubling, with a copy, as it fills.
    var encodedSizeHint: Int { get }
    /// Checks what a type cannot say (an identifier not empty, a number not negative); the generated
    /// `init(json:)` calls it after reading every field. Hand-written in the contract's extensions.
    func validate() throws(WireFieldError)
}

extension WireMessage {
    public func validate() throws(WireFieldError) {}
}

extension WireMessage {
    public func write(into out: inout [UInt8]) { JSON.object(json).write(into: &out) }
    public var encodedSizeHint: Int { 0 }
}

extension WireMessage {
    /// Reads the struct from a JSON value that must be an object (`field` names it in errors).
    public init(value: JSON?, field: String) throws(WireFieldError) {
        guard case .object(let o)? = value else { throw WireFieldError(field) }
        try self.init(json: o)
    }
}

/// A method's contract: its parameters and its reply.
public protocol WireMethod: Sendable {
    /// The fully qualified method name (`interface.Method`).
    var qualifiedName: String { get }
    var parametersType: any WireMessage.Type { get }
    var replyType: any WireMessage.Type { get }
}

/// A struct with no fields (`()`).
public struct WireEmpty: WireMessage {
    public static let fields: [String] = []
    public init() {}
    public init(json: [String: JSON]) throws(WireFieldError) {}
    public var json: [String: JSON] { [:] }
    public func write(into out: inout [UInt8]) { out.append(contentsOf: [UInt8(ascii: "{"), UInt8(ascii: "}")]) }
}

// MARK: - Reading and writing fields

/// Reads typed fields from a JSON object. A scalar must be present unless optional; null is absent.
public struct WireReader: Sendable {
    public let object: [String: JSON]
    public init(_ object: [String: JSON]) { self.object = object }

    private func present(_ key: String) -> JSON? {
        guard let v = object[key], v != .null else { return nil }
        return v
    }

    public func string(_ key: String) throws(WireFieldError) -> String {
        guard let s = try optionalString(key) else { throw WireFieldError(key) }
        return s
    }
    public func optionalString(_ key: String) throws(WireFieldError) -> String? {
        guard let v = present(key) else { return nil }
        guard case .string(let s) = v else { throw WireFieldError(key) }
        return s
    }
    public func int(_ key: String) throws(WireFieldError) -> Int64 {
        guard let i = try optionalInt(key) else { throw WireFieldError(key) }
        return i
    }
    public func optionalInt(_ key: String) throws(WireFieldError) -> Int64? {
        guard let v = present(key) else { return nil }
        guard let i = v.intValue else { throw WireFieldError(key) }
        return i
    }
    public func bool(_ key: String) throws(WireFieldError) -> Bool {
        guard let b = try optionalBool(key) else { throw WireFieldError(key) }
        return b
    }
    public func optionalBool(_ key: String) throws(WireFieldError) -> Bool? {
        guard let v = present(key) else { return nil }
        guard case .bool(let b) = v else { throw WireFieldError(key) }
        return b
    }
    public func value<T: RawRepresentable<String>>(_ key: String, as: T.Type = T.self) throws(WireFieldError) -> T {
        guard let t = try optionalValue(key, as: T.self) else { throw WireFieldError(key) }
        return t
    }
    public func optionalValue<T: RawRepresentable<String>>(_ key: String, as: T.Type = T.self) throws(WireFieldError) -> T? {
        guard let s = try optionalString(key) else { return nil }
        guard let t = T(rawValue: s) else { throw WireFieldError(key) }
        return t
    }
    /// A JSON object field kept as JSON (a notification's payload).
    public func optionalObject(_ key: String) throws(WireFieldError) -> JSON? {
        guard let v = present(key) else { return nil }
        guard case .object = v else { throw WireFieldError(key) }
        return v
    }
    public func message<T: WireMessage>(_ key: String, as: T.Type = T.self) throws(WireFieldError) -> T {
        guard let t = try optionalMessage(key, as: T.self) else { throw WireFieldError(key) }
        return t
    }
    public func optionalMessage<T: WireMessage>(_ key: String, as: T.Type = T.self) throws(WireFieldError) -> T? {
        guard let v = present(key) else { return nil }
        guard case .object(let o) = v else { throw WireFieldError(key) }
        do { return try T(json: o) } catch { throw WireFieldError(key) }
    }
    /// An array of structs; absent or null is empty (a container, as the checks treat it).
    public func messages<T: WireMessage>(_ key: String, as: T.Type = T.self) throws(WireFieldError) -> [T] {
        guard let v = present(key) else { return [] }
        guard case .array(let items) = v else { throw WireFieldError(key) }
        var out: [T] = []
        out.reserveCapacity(items.count)
        for item in items {
            guard case .object(let o) = item else { throw WireFieldError(key) }
            do { out.append(try T(json: o)) } catch { throw WireFieldError(key) }
        }
        return out
    }
    /// An identifier (`TaskID`, `EventID`, `ActivityID`): an int, not negative.
    public func identifier<T: WireIdentifier>(_ key: String, as: T.Type = T.self) throws(WireFieldError) -> T {
        guard let t = try optionalIdentifier(key, as: T.self) else { throw WireFieldError(key) }
        return t
    }
    public func optionalIdentifier<T: WireIdentifier>(_ key: String, as: T.Type = T.self) throws(WireFieldError) -> T? {
        guard let i = try optionalInt(key) else { return nil }
        guard i >= 0 else { throw WireFieldError(key) }
        return T(rawValue: UInt64(i))
    }
    /// A `[string]string` map: an object whose values are all strings.
    public func stringMap(_ key: String) throws(WireFieldError) -> [String: String] {
        guard let m = try optionalStringMap(key) else { throw WireFieldError(key) }
        return m
    }
    public func optionalStringMap(_ key: String) throws(WireFieldError) -> [String: String]? {
        guard let v = present(key) else { return nil }
        guard case .object(let members) = v else { throw WireFieldError(key) }
        var out: [String: String] = [:]
        for (name, value) in members {
            guard case .string(let s) = value else { throw WireFieldError(key) }
            out[name] = s
        }
        return out
    }
    /// An `[string]int` map: an object whose values are all integers.
    public func intMap(_ key: String) throws(WireFieldError) -> [String: Int64] {
        guard let m = try optionalIntMap(key) else { throw WireFieldError(key) }
        return m
    }
    public func optionalIntMap(_ key: String) throws(WireFieldError) -> [String: Int64]? {
        guard let v = present(key) else { return nil }
        guard case .object(let members) = v else { throw WireFieldError(key) }
        var out: [String: Int64] = [:]
        for (name, value) in members {
            guard let n = value.intValue else { throw WireFieldError(key) }
            out[name] = n
        }
        return out
    }
    /// A Bool sent as `on` or `off` (`AppInfo.refreshSetting`).
    public func onOff(_ key: String) throws(WireFieldError) -> Bool {
        guard let b = try optionalOnOff(key) else { throw WireFieldError(key) }
        return b
    }
    public func optionalOnOff(_ key: String) throws(WireFieldError) -> Bool? {
        switch try optionalString(key) {
        case nil: return nil
        case "on"?: return true
        case "off"?: return false
        default: throw WireFieldError(key)
        }
    }
    public func optionalStrings(_ key: String) throws(WireFieldError) -> [String]? {
        guard let v = present(key) else { return nil }
        guard case .array(let items) = v else { throw WireFieldError(key) }
        var out: [String] = []
        for item in items {
            guard case .string(let s) = item else { throw WireFieldError(key) }
            out.append(s)
        }
        return out
    }
}

/// An enum field of a reply or a type, read without failing on a value this build does not know: a newer
/// daemon may answer with a state, decision, reason or mode an older client has no case for, and the
/// client still shows it (its raw string). `known` is the case when there is one. Only what the daemon
/// sends is read this way; the parameters of calls keep their enums, so a call with an unknown value is
/// still `InvalidParameter` (`WireReader.value`).
public struct WireEnum<Value: RawRepresentable<String> & Sendable & Equatable>: RawRepresentable, Sendable, Equatable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ value: Value) { rawValue = value.rawValue }
    /// The case, or nil for a value this build does not know.
    public var known: Value? { Value(rawValue: rawValue) }
}

/// An identifier of the model carried by the wire as an int (`TaskID`, `EventID`, `ActivityID`).
public protocol WireIdentifier: RawRepresentable<UInt64>, Sendable, Equatable {
    init(rawValue: UInt64)
}

extension TaskID: WireIdentifier {}
extension EventID: WireIdentifier {}
extension ActivityID: WireIdentifier {}

extension JSON {
    /// `.int(identifier)`.
    @inlinable public static func id<T: WireIdentifier>(_ value: T) -> JSON { .int(Int64(clamping: value.rawValue)) }
    /// `.string(raw value)`.
    @inlinable public static func raw<T: RawRepresentable<String>>(_ value: T) -> JSON { .string(value.rawValue) }
    /// The value or null.
    @inlinable public static func orNull(_ value: String?) -> JSON { value.map { .string($0) } ?? .null }
    @inlinable public static func orNull(_ value: Int64?) -> JSON { value.map { .int($0) } ?? .null }
    @inlinable public static func orNull(_ value: Bool?) -> JSON { value.map { .bool($0) } ?? .null }
}

extension Dictionary where Key == String, Value == JSON {
    /// Sets `key` only when `value` is not nil (a field left out when absent).
    @inlinable mutating func put(_ key: String, _ value: JSON?) {
        if let value { self[key] = value }
    }
}

/// The `appId` every call about one app carries, read before the rest of the call (the daemon checks
/// the app and the caller first).
/// A struct that names one app (`appId: string`).
public protocol WireAppNamed: WireMessage {
    var appId: String { get }
}

public enum WireAppID: Sendable {
    public static let key = "appId"

    /// The call's `appId` (without building its parameters when the fast path decoded it).
    public static func of(_ call: VarlinkCall) throws(WireFieldError) -> String {
        if let fast = call.fast {
            switch fast {
            case .begin(let p): return p.appId
            case .end(let p): return p.appId
            case .foreground(let p): return p.appId
            case .background(let p): return p.appId
            case .acknowledge: break
            }
        }
        return try of(call.parameters)
    }

    /// The call's `appId`: a string, else `InvalidParameter`.
    public static func of(_ parameters: [String: JSON]) throws(WireFieldError) -> String {
        try WireReader(parameters).string(key)
    }

    /// The call's `appId` when it has one that is a string (null and absent are nil).
    public static func optional(_ parameters: [String: JSON]) -> String? {
        try? WireReader(parameters).optionalString(key)
    }
}

/// A message whose JSON object is already written: its text (`{...}`, what `write(into:)` of the message it
/// stands for appends) in parts, one after the other. A reply written in parts on several threads
/// (`ListApps` with thousands of apps) is sent this way, each part copied once into the connection's buffer.
public struct EncodedMessage: WireMessage {
    public static let fields: [String] = []
    public let parts: [[UInt8]]

    public init(parts: [[UInt8]]) { self.parts = parts }

    public init(json: [String: JSON]) {
        var out: [UInt8] = []
        JSON.object(json).write(into: &out)
        parts = [out]
    }

    /// The whole text.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        write(into: &out)
        return out
    }

    /// The object parsed back (an in-memory connection and the tests read replies this way); empty if the
    /// text is not one.
    public var json: [String: JSON] {
        guard let parsed = try? JSON.parse(bytes), case .object(let o) = parsed else { return [:] }
        return o
    }

    public func write(into out: inout [UInt8]) {
        out.reserveCapacity(out.count + encodedSizeHint)
        for part in parts { out.append(contentsOf: part) }
    }

    public var encodedSizeHint: Int { parts.reduce(0) { $0 + $1.count } }

    public static func == (a: EncodedMessage, b: EncodedMessage) -> Bool { a.bytes == b.bytes }
}
