// The methods, errors and structs of `org.varlink.service` are generated from varlink/org.varlink.service.varlink
// (Generated/ServiceWire+*.generated.swift).

extension ServiceWire {
    /// Error names of `org.varlink.service` → their parameters.
    public static var declaredErrors: [String: [String]] { ServiceError.declared }
}

extension VarlinkCall {
    /// A call of a typed method with its parameters.
    public init(_ method: some WireMethod, _ parameters: some WireMessage, more: Bool = false, oneway: Bool = false) {
        self.init(method: method.qualifiedName, parameters: parameters.json, more: more, oneway: oneway)
    }

    /// The call's parameters as `T` (`InvalidParameter` naming the first that does not fit).
    public func decode<T: WireMessage>(_: T.Type = T.self) throws(VarlinkError) -> T {
        // Decoded by the fast path: already the struct (a type comparison, no dynamic cast).
        if let fast {
            switch fast {
            case .begin(let p) where T.self == AppWire.BeginBackgroundTask.self: return unsafeBitCast(p, to: T.self)
            case .end(let p) where T.self == AppWire.EndBackgroundTask.self: return unsafeBitCast(p, to: T.self)
            case .acknowledge(let p) where T.self == AppWire.Acknowledge.self: return unsafeBitCast(p, to: T.self)
            default: break
            }
        }
        do { return try T(json: parameters) } catch { throw error.varlinkError }
    }
}

extension VarlinkReply {
    /// The reply's parameters as `T`.
    public func decode<T: WireMessage>(_: T.Type = T.self) throws(WireFieldError) -> T { try T(json: parameters) }
}
