import BGTaskModel

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Splits a byte stream into NUL-terminated Varlink messages.
///
/// Bytes arrive in any chunking (one at a time, several messages at once); `next()` returns each
/// complete message once. A message longer than `maxMessageSize` without its terminator is an error:
/// the connection must be closed, since nothing after it can be trusted.
public struct VarlinkFramer: Sendable {
    public let maxMessageSize: Int
    private var buffer: [UInt8] = []
    private var start = 0
    private var scanned = 0

    public init(maxMessageSize: Int = 64 * 1024) {
        self.maxMessageSize = maxMessageSize
    }

    public enum Failure: Error, Sendable, Equatable { case messageTooLarge }

    /// Bytes received but not yet returned as a message.
    public var bufferedCount: Int { buffer.count - start }

    /// True when a terminated message is buffered.
    public var hasCompleteMessage: Bool { buffer[max(scanned, start)...].contains(0) }

    public mutating func append<C: Collection<UInt8>>(_ bytes: C) {
        compactIfNeeded()
        buffer.append(contentsOf: bytes)
    }

    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        compactIfNeeded()
        buffer.append(contentsOf: bytes)
    }

    /// The next complete message without its NUL, nil when more bytes are needed.
    ///
    /// The message returned shares the buffer: the buffer is compacted on the next `append` or `next()`,
    /// once the caller has let the message go, so that emptying it keeps its storage (compacted while the
    /// message still held it, every message cost a new buffer).
    public mutating func next() throws(Failure) -> ArraySlice<UInt8>? {
        compactIfNeeded()
        let from = max(scanned, start)
        let end = buffer.count
        // memchr: the terminator found at the speed of the C library, not byte by byte.
        let nul: Int? = buffer.withUnsafeBufferPointer { b in
            guard let base = b.baseAddress, from < end, let p = memchr(base + from, 0, end - from) else { return nil }
            return UnsafeRawPointer(p) - UnsafeRawPointer(base)
        }
        if let i = nul {
            let message = buffer[start..<i]
            start = i + 1
            scanned = start
            if message.count > maxMessageSize { throw .messageTooLarge }
            return message
        }
        scanned = end
        if end - start > maxMessageSize { throw .messageTooLarge }
        compactIfNeeded()
        return nil
    }

    private mutating func compactIfNeeded() {
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
            scanned = 0
        } else if start > 4096 && start * 2 > buffer.count {
            buffer.removeFirst(start)
            scanned -= start
            start = 0
        }
    }
}

/// A method call as received from a Varlink client.
///
/// A value with its fields in one copy-on-write box (`CopyOnWrite`), as BGTaskCore's `Decision` is: a call
/// rides in its request from the decoder to the reply and is copied about ten times on the way, each copy
/// one reference count rather than ~150 bytes and five references.
public struct VarlinkCall: Sendable, Equatable, CustomReflectable {
    struct Fields {
        var method: String
        var more: Bool
        var oneway: Bool
        var upgrade: Bool
        var interface: Substring
        var methodName: Substring
        var fast: VarlinkFastDecoder.Parameters?
        var storedParameters: [String: JSON]
    }

    private var storage: CopyOnWrite<Fields>

    /// Fully qualified: `interface.Method`.
    public var method: String {
        get { storage[\.method] }
        set {
            storage.modify {
                $0.method = newValue
                ($0.interface, $0.methodName) = Self.split(newValue)
                $0.fast = nil
            }
        }
    }
    /// The parameters. A call decoded by the fast path (VarlinkFastDecoder) holds them typed
    /// (``typedParameters``) and builds this object only when it is asked for.
    public var parameters: [String: JSON] {
        get { storage[\.fast]?.message.json ?? storage[\.storedParameters] }
        set {
            storage.modify {
                $0.storedParameters = newValue
                $0.fast = nil
            }
        }
    }
    public var more: Bool {
        get { storage[\.more] }
        set { storage.modify { $0.more = newValue } }
    }
    public var oneway: Bool {
        get { storage[\.oneway] }
        set { storage.modify { $0.oneway = newValue } }
    }
    public var upgrade: Bool {
        get { storage[\.upgrade] }
        set { storage.modify { $0.upgrade = newValue } }
    }
    /// The interface part of `method` (split once, not on every look-up).
    public var interface: Substring { storage[\.interface] }
    /// The method name without its interface.
    public var methodName: Substring { storage[\.methodName] }
    /// The parameters as the contract's struct, when the fast path decoded them (already checked:
    /// every field present and of its declared type).
    public var fast: VarlinkFastDecoder.Parameters? { storage[\.fast] }
    public var typedParameters: (any WireMessage)? { storage[\.fast]?.message }
    /// The `io.bgtaskd.App` method, when the fast path decoded the call.
    public var appMethod: AppMethod? { storage[\.fast]?.appMethod }
    /// The `io.bgtaskd.Manager` method, when the fast path decoded the call.
    public var managerMethod: ManagerMethod? { storage[\.fast]?.managerMethod }

    public init(method: String, parameters: [String: JSON] = [:], more: Bool = false, oneway: Bool = false, upgrade: Bool = false) {
        let (interface, methodName) = Self.split(method)
        storage = CopyOnWrite(
            Fields(
                method: method, more: more, oneway: oneway, upgrade: upgrade, interface: interface,
                methodName: methodName, fast: nil, storedParameters: parameters))
    }

    /// A call decoded by the fast path: its method's names are the contract's (shared, not copied).
    init(fast parameters: VarlinkFastDecoder.Parameters, names: VarlinkFastDecoder.Names, more: Bool, oneway: Bool) {
        storage = CopyOnWrite(
            Fields(
                method: names.method, more: more, oneway: oneway, upgrade: false, interface: names.interface,
                methodName: names.methodName, fast: parameters, storedParameters: [:]))
    }

    /// The fields, so that a call prints as the struct did.
    public var customMirror: Mirror {
        Mirror(self, children: Mirror(reflecting: storage.fields).children, displayStyle: .struct)
    }

    public static func == (a: VarlinkCall, b: VarlinkCall) -> Bool {
        a.storage.shares(with: b.storage)
            || (a.method == b.method && a.more == b.more && a.oneway == b.oneway && a.upgrade == b.upgrade
                && a.parameters == b.parameters)
    }

    private static func split(_ method: String) -> (Substring, Substring) {
        // The last "." on the UTF-8 bytes: one scan of contiguous storage, not a walk over a view.
        var method = method
        let dot: Int? = method.withUTF8 { bytes in
            var i = bytes.count
            while i > 0 {
                i -= 1
                if bytes[i] == UInt8(ascii: ".") { return i }
            }
            return nil
        }
        guard let dot else { return ("", method[...]) }
        let at = method.utf8.index(method.startIndex, offsetBy: dot)
        return (method[..<at], method[method.utf8.index(after: at)...])
    }

    /// Why a message is not a valid call.
    public enum DecodeError: Error, Sendable, Equatable {
        case invalidJSON(String)
        case notAnObject
        case missingMethod
        case invalidField(String)
    }

    /// Decodes one message (without its NUL).
    public static func decode<C: Collection<UInt8>>(_ bytes: C) throws(DecodeError) -> VarlinkCall {
        let json: JSON
        do { json = try JSON.parse(bytes) } catch { throw .invalidJSON(error.description) }
        guard case .object(let o) = json else { throw .notAnObject }
        guard let m = o["method"] else { throw .missingMethod }
        guard case .string(let method) = m, !method.isEmpty else { throw .invalidField("method") }
        var call = VarlinkCall(method: method)
        switch o["parameters"] {
        case nil, .null?: break
        case .object(let p)?: call.parameters = p
        default: throw .invalidField("parameters")
        }
        for (field, path) in [("more", \VarlinkCall.more), ("oneway", \.oneway), ("upgrade", \.upgrade)] {
            switch o[field] {
            case nil, .null?: break
            case .bool(let b)?: call[keyPath: path] = b
            default: throw .invalidField(field)
            }
        }
        return call
    }

    /// The call as a NUL-terminated message.
    public func encoded() -> [UInt8] {
        var o: [String: JSON] = ["method": .string(method)]
        if !parameters.isEmpty { o["parameters"] = .object(parameters) }
        if more { o["more"] = true }
        if oneway { o["oneway"] = true }
        if upgrade { o["upgrade"] = true }
        var out: [UInt8] = []
        out.reserveCapacity(128)
        JSON.object(o).write(into: &out)
        out.append(0)
        return out
    }
}

/// A reply to a call: parameters, or a named error; `continues` while more replies follow.
public struct VarlinkReply: Sendable, Equatable {
    /// The parameters. A reply made from a struct of the contract (``init(_:continues:)``) writes its
    /// bytes from the struct and builds this object only when it is asked for.
    public var parameters: [String: JSON] {
        get { typedParameters?.json ?? storedParameters }
        set {
            storedParameters = newValue
            typedParameters = nil
        }
    }
    public var continues: Bool
    public var error: String?
    private var storedParameters: [String: JSON]
    private var typedParameters: (any WireMessage)?

    public init(parameters: [String: JSON] = [:], continues: Bool = false, error: String? = nil) {
        self.storedParameters = parameters
        self.continues = continues
        self.error = error
    }

    /// A reply from a typed struct.
    public init(_ message: some WireMessage, continues: Bool = false) {
        self.storedParameters = [:]
        self.typedParameters = message
        self.continues = continues
        self.error = nil
    }

    public static func == (a: VarlinkReply, b: VarlinkReply) -> Bool {
        a.continues == b.continues && a.error == b.error && a.parameters == b.parameters
    }

    public static func failure(_ error: VarlinkError) -> VarlinkReply {
        VarlinkReply(parameters: error.parameters, error: error.name)
    }

    /// The reply as a NUL-terminated message.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        append(to: &out)
        return out
    }

    /// Appends the NUL-terminated message to `out` (avoids a copy when writing several).
    public func append(to out: inout [UInt8]) {
        // The envelope written by hand, keys in the order JSON.write sorts them (continues, error,
        // parameters): the same bytes as before, without a dictionary per reply.
        if continues {
            out.append(contentsOf: #"{"continues":true,"#.utf8)
        } else {
            out.append(UInt8(ascii: "{"))
        }
        if let error {
            out.append(contentsOf: #""error":"#.utf8)
            JSON.writeString(error, into: &out)
            out.append(UInt8(ascii: ","))
        }
        out.append(contentsOf: #""parameters":"#.utf8)
        if let typedParameters {
            let hint = typedParameters.encodedSizeHint
            if hint > 0 { out.reserveCapacity(out.count + hint + 64) }
            typedParameters.write(into: &out)
        } else {
            JSON.object(storedParameters).write(into: &out)
        }
        out.append(contentsOf: [UInt8(ascii: "}"), 0])
    }

    public static func decode<C: Collection<UInt8>>(_ bytes: C) throws(VarlinkCall.DecodeError) -> VarlinkReply {
        let json: JSON
        do { json = try JSON.parse(bytes) } catch { throw .invalidJSON(error.description) }
        guard case .object(let o) = json else { throw .notAnObject }
        var reply = VarlinkReply()
        switch o["parameters"] {
        case nil, .null?: break
        case .object(let p)?: reply.parameters = p
        default: throw .invalidField("parameters")
        }
        switch o["continues"] {
        case nil, .null?: break
        case .bool(let b)?: reply.continues = b
        default: throw .invalidField("continues")
        }
        switch o["error"] {
        case nil, .null?: break
        case .string(let e)?: reply.error = e
        default: throw .invalidField("error")
        }
        return reply
    }
}

/// A named Varlink error with its parameters.
public struct VarlinkError: Error, Sendable, Equatable, CustomStringConvertible {
    public var name: String
    public var parameters: [String: JSON]

    public init(_ name: String, _ parameters: [String: JSON] = [:]) {
        self.name = name
        self.parameters = parameters
    }

    public var description: String {
        parameters.isEmpty ? name : "\(name) \(JSON.object(parameters).serialized())"
    }

    public static func interfaceNotFound(_ interface: some StringProtocol) -> VarlinkError {
        VarlinkError("org.varlink.service.InterfaceNotFound", ["interface": .string(String(interface))])
    }
    public static func methodNotFound(_ method: some StringProtocol) -> VarlinkError {
        VarlinkError("org.varlink.service.MethodNotFound", ["method": .string(String(method))])
    }
    public static func methodNotImplemented(_ method: some StringProtocol) -> VarlinkError {
        VarlinkError("org.varlink.service.MethodNotImplemented", ["method": .string(String(method))])
    }
    public static func invalidParameter(_ parameter: some StringProtocol) -> VarlinkError {
        VarlinkError("org.varlink.service.InvalidParameter", ["parameter": .string(String(parameter))])
    }
    public static let permissionDenied = VarlinkError("org.varlink.service.PermissionDenied")
    public static let expectedMore = VarlinkError("org.varlink.service.ExpectedMore")
}
