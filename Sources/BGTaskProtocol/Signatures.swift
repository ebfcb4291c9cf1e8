/// The types of the Varlink interface definition language, enough to check a call's parameters
/// against the interface description the service publishes (issue 11: a parameter of the wrong type
/// is `org.varlink.service.InvalidParameter` naming it, for every method, not only where a handler
/// happens to look).
public indirect enum VarlinkType: Sendable, Equatable {
    case bool, int, float, string, object
    case optional(VarlinkType)
    case array(VarlinkType)
    /// `[string]T`; `[string]()` is a set (values are empty objects).
    case map(VarlinkType)
    case structure([VarlinkField])
    case enumeration([String])
    /// A `type` of the same interface.
    case named(String)
}

public struct VarlinkField: Sendable, Equatable {
    public var name: String
    public var type: VarlinkType

    public init(name: String, type: VarlinkType) {
        self.name = name
        self.type = type
    }

    /// A field of the generated signature table.
    public init(_ name: String, _ type: VarlinkType) {
        self.init(name: name, type: type)
    }
}

/// One interface description, parsed: its named types and the input of each method.
public struct VarlinkInterfaceSignature: Sendable, Equatable {
    public let name: String
    public let types: [String: VarlinkType]
    /// Method name → input fields, in declaration order.
    public let methods: [String: [VarlinkField]]
    /// Method name → output fields, in declaration order.
    public let outputs: [String: [VarlinkField]]
    /// Error name (without the interface) → its fields, in declaration order.
    public let errors: [String: [VarlinkField]]

    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// A signature as the generated table declares it (Generated/Interfaces+Signatures.generated.swift).
    public init(
        name: String, types: [String: VarlinkType], methods: [String: [VarlinkField]], outputs: [String: [VarlinkField]],
        errors: [String: [VarlinkField]]
    ) {
        self.name = name
        self.types = types
        self.methods = methods
        self.outputs = outputs
        self.errors = errors
    }

    /// Parses a description (`interface`, `type`, `method`, `error` declarations; `#` comments).
    public init(parsing text: String) throws(ParseError) {
        var p = IDLScanner(text)
        guard p.keyword() == "interface", let name = p.word() else { throw ParseError(description: "no interface declaration") }
        var types: [String: VarlinkType] = [:]
        var methods: [String: [VarlinkField]] = [:]
        var outputs: [String: [VarlinkField]] = [:]
        var errors: [String: [VarlinkField]] = [:]
        while let keyword = p.keyword() {
            guard let member = p.word() else { throw ParseError(description: "\(keyword) without a name") }
            switch keyword {
            case "type":
                types[member] = try p.structOrEnum()
            case "method":
                guard case .structure(let input) = try p.structOrEnum() else {
                    throw ParseError(description: "method \(member): input is not a struct")
                }
                guard p.arrow() else { throw ParseError(description: "method \(member): no ->") }
                guard case .structure(let output) = try p.structOrEnum() else {
                    throw ParseError(description: "method \(member): output is not a struct")
                }
                methods[member] = input
                outputs[member] = output
            case "error":
                guard case .structure(let fields) = try p.structOrEnum() else {
                    throw ParseError(description: "error \(member): not a struct")
                }
                errors[member] = fields
            default:
                throw ParseError(description: "unknown keyword \(keyword)")
            }
        }
        self.name = name
        self.types = types
        self.methods = methods
        self.outputs = outputs
        self.errors = errors
    }

    /// Checks a call's parameters against `method`'s input: the name of the first one that does not fit,
    /// nil when all do. A parameter of a scalar type (bool, int, float, string, enum) must be present and
    /// not null unless optional; a container (struct, map, array, object) given as null or left out
    /// counts as empty, as the reference implementation treats it. Unknown parameters are left to the
    /// method (extensions). Values are checked in depth: a wrong element names the parameter it is in.
    public func invalidParameter(of method: String, in parameters: [String: JSON]) -> String? {
        guard let fields = methods[method] else { return nil }
        for field in fields {
            let value = parameters[field.name]
            if value == nil || value == .null {
                if requiresValue(field.type) { return field.name }
                continue
            }
            if let value, !accepts(value, as: field.type, depth: 0) { return field.name }
        }
        return nil
    }

    private func resolved(_ type: VarlinkType) -> VarlinkType {
        var t = type
        var hops = 0
        while case .named(let n) = t, let next = types[n], hops < 16 {
            t = next
            hops += 1
        }
        return t
    }

    private func requiresValue(_ type: VarlinkType) -> Bool {
        switch resolved(type) {
        case .bool, .int, .float, .string, .enumeration: return true
        default: return false
        }
    }

    private func accepts(_ value: JSON, as type: VarlinkType, depth: Int) -> Bool {
        // Bounded: the JSON parser limits nesting too; named types may refer to themselves.
        guard depth < 64 else { return false }
        switch (resolved(type), value) {
        case (.optional, .null): return true
        case (.optional(let inner), _): return accepts(value, as: inner, depth: depth + 1)
        case (.bool, .bool): return true
        case (.int, .int): return true
        case (.int, .double(let d)): return d.rounded() == d && abs(d) < 9.2e18
        case (.float, .int), (.float, .double): return true
        case (.string, .string): return true
        case (.object, .object): return true
        case (.enumeration(let names), .string(let s)): return names.contains(s)
        case (.array(let element), .array(let items)):
            return items.allSatisfy { accepts($0, as: element, depth: depth + 1) }
        case (.map(let element), .object(let members)):
            return members.values.allSatisfy { accepts($0, as: element, depth: depth + 1) }
        case (.structure(let fields), .object(let members)):
            for field in fields {
                guard let v = members[field.name], v != .null else { continue }
                if !accepts(v, as: field.type, depth: depth + 1) { return false }
            }
            return true
        case (.named, _): return false  // an undefined type name: nothing fits
        default: return false
        }
    }
}

/// The interfaces a server serves, parsed once: the checks every call goes through before a handler
/// sees it (the server and the fuzz target run exactly this).
public struct VarlinkInterfaceRegistry: Sendable {
    public private(set) var interfaces: [String: VarlinkInterfaceSignature] = [:]
    /// The methods the fast path decodes whose registered declaration is the contract's: their calls
    /// were checked field by field as they were decoded.
    private var fastBegin = false
    private var fastEnd = false
    private var fastAcknowledge = false
    private var fastForeground = false
    private var fastBackground = false

    public init() {}

    /// Adds (or replaces) an interface; its name is the one its description declares.
    public mutating func register(description: String) throws(VarlinkInterfaceSignature.ParseError) {
        register(try VarlinkInterfaceSignature(parsing: description))
    }

    /// Adds (or replaces) an interface from its signature (bgtaskd's: the generated table).
    public mutating func register(_ signature: VarlinkInterfaceSignature) {
        interfaces[signature.name] = signature
        let app = interfaces[AppMethod.interface]
        func declared(_ m: AppMethod) -> Bool { app?.methods[m.rawValue]?.map(\.name) == m.parametersType.fields }
        fastBegin = declared(.beginBackgroundTask)
        fastEnd = declared(.endBackgroundTask)
        fastAcknowledge = declared(.acknowledge)
        let manager = interfaces[ManagerMethod.interface]
        func declared(_ m: ManagerMethod) -> Bool { manager?.methods[m.rawValue]?.map(\.name) == m.parametersType.fields }
        fastForeground = declared(.foreground)
        fastBackground = declared(.background)
    }

    /// Whether the fast path decoded `call` for a method registered here as the contract declares it: the
    /// method is known and every field was checked as it was read (``check(_:)`` finds nothing wrong).
    public func checkedByFastPath(_ call: VarlinkCall) -> Bool {
        switch call.fast {
        case .begin? where fastBegin, .end? where fastEnd, .acknowledge? where fastAcknowledge: return true
        case .foreground? where fastForeground, .background? where fastBackground: return true
        default: return false
        }
    }

    /// Why `call` cannot be served, nil when it can: an unknown interface or method, an upgrade (not
    /// supported: no method here speaks another protocol afterwards), or a parameter that does not fit
    /// the method's declaration.
    public func check(_ call: VarlinkCall) -> VarlinkError? {
        // Decoded by the fast path: every field was read as its declared type (and `upgrade` is false).
        if checkedByFastPath(call) { return nil }
        guard let interface = interfaces[String(call.interface)] else { return .interfaceNotFound(call.interface) }
        guard interface.methods[String(call.methodName)] != nil else { return .methodNotFound(call.method) }
        if call.upgrade { return .invalidParameter("upgrade") }
        if let name = interface.invalidParameter(of: String(call.methodName), in: call.parameters) {
            return .invalidParameter(name)
        }
        return nil
    }
}

/// What a connection's bytes turn into, in order: calls to serve, calls to answer with an error (the
/// connection stays), or the end (nothing after an oversized message, invalid JSON or a non-object can
/// be trusted: the connection closes).
public enum VarlinkInbound: Sendable, Equatable {
    case call(VarlinkCall)
    case reject(VarlinkError)
    case close
}

/// Framing, then decoding: the bytes of one connection in, `VarlinkInbound` out. The server's
/// connections and the fuzz target both use this.
public struct VarlinkInboundDecoder: Sendable {
    public private(set) var framer: VarlinkFramer

    public init(maxMessageSize: Int) {
        framer = VarlinkFramer(maxMessageSize: maxMessageSize)
    }

    public mutating func append(_ bytes: UnsafeRawBufferPointer) { framer.append(bytes) }
    public mutating func append<C: Collection<UInt8>>(_ bytes: C) { framer.append(bytes) }

    public var bufferedCount: Int { framer.bufferedCount }
    public var hasCompleteMessage: Bool { framer.hasCompleteMessage }
    /// True once `next()` returned `.close` for a message over `maxMessageSize` (rather than for invalid
    /// JSON or a non-object): the server counts those connections apart (Stats `connectionsOversized`).
    public private(set) var closedForSize = false

    /// The next message's meaning; nil while more bytes are needed.
    public mutating func next() -> VarlinkInbound? {
        let message: ArraySlice<UInt8>?
        do {
            message = try framer.next()
        } catch {
            closedForSize = true
            return .close
        }
        guard let message else { return nil }
        // The common calls without a JSON tree; anything else (or anything unusual) the full way.
        if let call = VarlinkFastDecoder.decode(message) { return .call(call) }
        do {
            return .call(try VarlinkCall.decode(message))
        } catch {
            switch error {
            case .invalidJSON, .notAnObject: return .close
            case .missingMethod: return .reject(.invalidParameter("method"))
            case .invalidField(let f): return .reject(.invalidParameter(f))
            }
        }
    }
}

/// A scanner for interface descriptions: words, punctuation, `#` comments skipped.
private struct IDLScanner {
    private let bytes: [UInt8]
    private var i = 0

    init(_ text: String) { bytes = Array(text.utf8) }

    private mutating func skipSpace() {
        while i < bytes.count {
            let c = bytes[i]
            if c == UInt8(ascii: "#") {
                while i < bytes.count, bytes[i] != UInt8(ascii: "\n") { i += 1 }
            } else if c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D {
                i += 1
            } else {
                return
            }
        }
    }

    private static func isWordByte(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x5F || c == 0x2E
    }

    mutating func word() -> String? {
        skipSpace()
        let start = i
        while i < bytes.count, Self.isWordByte(bytes[i]) { i += 1 }
        return i > start ? String(decoding: bytes[start..<i], as: UTF8.self) : nil
    }

    mutating func keyword() -> String? {
        skipSpace()
        return i < bytes.count ? word() : nil
    }

    mutating func consume(_ c: Character) -> Bool {
        skipSpace()
        guard i < bytes.count, let a = c.asciiValue, bytes[i] == a else { return false }
        i += 1
        return true
    }

    mutating func arrow() -> Bool {
        skipSpace()
        guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "-"), bytes[i + 1] == UInt8(ascii: ">") else { return false }
        i += 2
        return true
    }

    /// `( … )`: a struct (`name: type, …`), or an enum (`name, …`); `()` is an empty struct.
    mutating func structOrEnum() throws(VarlinkInterfaceSignature.ParseError) -> VarlinkType {
        guard consume("(") else { throw .init(description: "expected ( at byte \(i)") }
        if consume(")") { return .structure([]) }
        var fields: [VarlinkField] = []
        var names: [String] = []
        repeat {
            guard let name = word() else { throw .init(description: "expected a name at byte \(i)") }
            if consume(":") {
                fields.append(VarlinkField(name: name, type: try type()))
            } else {
                names.append(name)
            }
        } while consume(",")
        guard consume(")") else { throw .init(description: "expected ) at byte \(i)") }
        if !names.isEmpty && !fields.isEmpty { throw .init(description: "a struct mixed with an enum at byte \(i)") }
        return names.isEmpty ? .structure(fields) : .enumeration(names)
    }

    mutating func type() throws(VarlinkInterfaceSignature.ParseError) -> VarlinkType {
        if consume("?") { return .optional(try type()) }
        if consume("[") {
            if consume("]") { return .array(try type()) }
            guard word() == "string", consume("]") else { throw .init(description: "expected [string] at byte \(i)") }
            return .map(try type())
        }
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "(") { return try structOrEnum() }
        guard let name = word() else { throw .init(description: "expected a type at byte \(i)") }
        switch name {
        case "bool": return .bool
        case "int": return .int
        case "float": return .float
        case "string": return .string
        case "object": return .object
        default: return .named(name)
        }
    }
}
