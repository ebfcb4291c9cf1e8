/// The methods of `org.varlink.service` (raw value: the Varlink method name).
public enum ServiceMethod: String, CaseIterable, Sendable, WireMethod {
    case getInfo = "GetInfo"
    case getInterfaceDescription = "GetInterfaceDescription"

    public static let interface = Interfaces.serviceName
    public var qualifiedName: String { Self.interface + "." + rawValue }

    public init?(_ call: VarlinkCall) {
        guard call.interface == Self.interface[...] else { return nil }
        self.init(rawValue: String(call.methodName))
    }

    public var parametersType: any WireMessage.Type {
        switch self {
        case .getInfo: return WireEmpty.self
        case .getInterfaceDescription: return ServiceWire.GetInterfaceDescription.self
        }
    }

    public var replyType: any WireMessage.Type {
        switch self {
        case .getInfo: return ServiceWire.GetInfoReply.self
        case .getInterfaceDescription: return ServiceWire.GetInterfaceDescriptionReply.self
        }
    }
}

/// Parameter and reply structs of `org.varlink.service`; its errors are `VarlinkError`'s constructors.
public enum ServiceWire: Sendable {
    public struct GetInfoReply: WireMessage {
        public static let fields = ["vendor", "product", "version", "url", "interfaces"]
        public var vendor: String
        public var product: String
        public var version: String
        public var url: String
        public var interfaces: [String]
        public init(vendor: String, product: String, version: String, url: String, interfaces: [String]) {
            self.vendor = vendor
            self.product = product
            self.version = version
            self.url = url
            self.interfaces = interfaces
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(
                vendor: try r.string("vendor"), product: try r.string("product"), version: try r.string("version"),
                url: try r.string("url"), interfaces: try r.optionalStrings("interfaces") ?? [])
        }
        public var json: [String: JSON] {
            [
                "vendor": .string(vendor), "product": .string(product), "version": .string(version), "url": .string(url),
                "interfaces": .array(interfaces.map { .string($0) }),
            ]
        }
    }

    public struct GetInterfaceDescription: WireMessage {
        public static let fields = ["interface"]
        public var interface: String
        public init(interface: String) { self.interface = interface }
        public init(json: [String: JSON]) throws(WireFieldError) { interface = try WireReader(json).string("interface") }
        public var json: [String: JSON] { ["interface": .string(interface)] }
    }

    public struct GetInterfaceDescriptionReply: WireMessage {
        public static let fields = ["description"]
        public var description: String
        public init(description: String) { self.description = description }
        public init(json: [String: JSON]) throws(WireFieldError) { description = try WireReader(json).string("description") }
        public var json: [String: JSON] { ["description": .string(description)] }
    }

    /// Error names of `org.varlink.service` → their parameters.
    public static let declaredErrors: [String: [String]] = [
        "InterfaceNotFound": ["interface"], "MethodNotFound": ["method"], "MethodNotImplemented": ["method"],
        "InvalidParameter": ["parameter"], "PermissionDenied": [], "ExpectedMore": [],
    ]
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

/// The errors of `org.varlink.service`, as a client reads them (`VarlinkError`'s constructors make them).
public enum ServiceError: Error, Sendable, Equatable {
    case interfaceNotFound(interface: String)
    case methodNotFound(method: String)
    case methodNotImplemented(method: String)
    case invalidParameter(parameter: String)
    case permissionDenied
    case expectedMore

    /// The error a reply names; nil for another interface's or an unknown one.
    public init?(_ error: VarlinkError) {
        let prefix = ServiceMethod.interface + "."
        guard error.name.hasPrefix(prefix) else { return nil }
        let r = WireReader(error.parameters)
        func s(_ key: String) -> String { (try? r.string(key)) ?? "" }
        switch String(error.name.dropFirst(prefix.count)) {
        case "InterfaceNotFound": self = .interfaceNotFound(interface: s("interface"))
        case "MethodNotFound": self = .methodNotFound(method: s("method"))
        case "MethodNotImplemented": self = .methodNotImplemented(method: s("method"))
        case "InvalidParameter": self = .invalidParameter(parameter: s("parameter"))
        case "PermissionDenied": self = .permissionDenied
        case "ExpectedMore": self = .expectedMore
        default: return nil
        }
    }

    /// The error as sent.
    public var varlinkError: VarlinkError {
        switch self {
        case .interfaceNotFound(let i): return .interfaceNotFound(i)
        case .methodNotFound(let m): return .methodNotFound(m)
        case .methodNotImplemented(let m): return .methodNotImplemented(m)
        case .invalidParameter(let p): return .invalidParameter(p)
        case .permissionDenied: return .permissionDenied
        case .expectedMore: return .expectedMore
        }
    }
}
