public import BGTaskProtocol

/// Why a request to bgtaskd failed.
///
/// The daemon's named Varlink errors (`io.bgtaskd.App.*`, `io.bgtaskd.Manager.*`, `org.varlink.service.*`)
/// map to their own cases; any other name is kept whole in ``remote(_:)``.
public enum BGTaskClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No manifest declares this app (`NoSuchApp`).
    case noSuchApp(String)
    /// The caller's uid may not act for this app, or the method needs privileges (`PermissionDenied`).
    case permissionDenied
    /// The method needs a checked-in app (`NotCheckedIn`).
    case notCheckedIn(String)
    /// Another process is already checked in as this app (`AlreadyCheckedIn`).
    case alreadyCheckedIn(String)
    /// The event is unknown or was already acknowledged (`NoSuchEvent`).
    case noSuchEvent(Int64)
    /// The task identifier is not in the manifest's `PermittedTaskIdentifiers=` (`NotPermitted`).
    case notPermitted(String)
    /// The app has as many pending requests of that kind as allowed (`TooManyPendingTaskRequests`).
    case tooManyPendingTaskRequests(kind: String)
    /// Background App Refresh is not available to the app (`Unavailable`).
    case unavailable(reason: String)
    /// The manifest does not declare the background mode (`ModeNotDeclared`).
    case modeNotDeclared(String)
    /// The request does not fit the app's state (`InvalidState`).
    case invalidState(String)
    /// A parameter was refused (`org.varlink.service.InvalidParameter`).
    case invalidParameter(String)
    /// The daemon does not offer the method (`MethodNotImplemented`, `MethodNotFound`, `InterfaceNotFound`).
    case notImplemented(String)
    /// Any other named Varlink error.
    case remote(VarlinkError)
    /// The daemon's socket could not be reached.
    case cannotConnect(String)
    /// The connection broke (or timed out) before the reply came.
    case disconnected(String)
    /// The daemon answered with something this library cannot read.
    case invalidReply(String)

    /// Maps a named Varlink error to its case.
    public init(varlinkError error: VarlinkError) {
        if let e = AppError(error) {
            switch e {
            case .noSuchApp(let a): self = .noSuchApp(a)
            case .permissionDenied: self = .permissionDenied
            case .notCheckedIn(let a): self = .notCheckedIn(a)
            case .alreadyCheckedIn(let a): self = .alreadyCheckedIn(a)
            case .noSuchEvent(let id): self = .noSuchEvent(id)
            case .notPermitted(let i): self = .notPermitted(i)
            case .tooManyPendingTaskRequests(let k): self = .tooManyPendingTaskRequests(kind: k)
            case .unavailable(let r): self = .unavailable(reason: r)
            case .modeNotDeclared(let m): self = .modeNotDeclared(m)
            case .invalidState(let s): self = .invalidState(s)
            case .modeNotContinuous: self = .remote(error)
            }
        } else if let e = ManagerError(error) {
            switch e {
            case .noSuchApp(let a): self = .noSuchApp(a)
            case .permissionDenied: self = .permissionDenied
            case .notCheckedIn(let a): self = .notCheckedIn(a)
            case .alreadyCheckedIn(let a): self = .alreadyCheckedIn(a)
            case .notPermitted(let i): self = .notPermitted(i)
            case .unavailable(let r): self = .unavailable(reason: r)
            case .modeNotDeclared(let m): self = .modeNotDeclared(m)
            case .invalidState(let s): self = .invalidState(s)
            case .invalidConfiguration, .launchFailed, .holdLost: self = .remote(error)
            }
        } else if let e = ServiceError(error) {
            switch e {
            case .permissionDenied: self = .permissionDenied
            case .invalidParameter(let p): self = .invalidParameter(p)
            case .methodNotImplemented(let m), .methodNotFound(let m): self = .notImplemented(m)
            case .interfaceNotFound(let i): self = .notImplemented(i)
            case .expectedMore: self = .remote(error)
            }
        } else {
            self = .remote(error)
        }
    }

    /// Maps an error of the low-level connection.
    public init(_ error: VarlinkClientError) {
        switch error {
        case .remote(let e): self.init(varlinkError: e)
        case .connect(let s): self = .cannotConnect(s)
        case .io(let s): self = .disconnected(s)
        }
    }

    /// The short wire name of a named error (`NotPermitted`), or a kebab-case word for local failures.
    public var name: String {
        switch self {
        case .noSuchApp: return "NoSuchApp"
        case .permissionDenied: return "PermissionDenied"
        case .notCheckedIn: return "NotCheckedIn"
        case .alreadyCheckedIn: return "AlreadyCheckedIn"
        case .noSuchEvent: return "NoSuchEvent"
        case .notPermitted: return "NotPermitted"
        case .tooManyPendingTaskRequests: return "TooManyPendingTaskRequests"
        case .unavailable: return "Unavailable"
        case .modeNotDeclared: return "ModeNotDeclared"
        case .invalidState: return "InvalidState"
        case .invalidParameter: return "InvalidParameter"
        case .notImplemented: return "MethodNotImplemented"
        case .remote(let e): return e.name
        case .cannotConnect: return "cannot-connect"
        case .disconnected: return "disconnected"
        case .invalidReply: return "invalid-reply"
        }
    }

    public var description: String {
        switch self {
        case .noSuchApp(let app): return "no such app: \(app)"
        case .permissionDenied: return "permission denied"
        case .notCheckedIn(let app): return "\(app.isEmpty ? "the app" : app) has not checked in"
        case .alreadyCheckedIn(let app): return "\(app.isEmpty ? "the app" : app) is already checked in"
        case .noSuchEvent(let id): return "no such event: \(id)"
        case .notPermitted(let identifier): return "task identifier not permitted: \(identifier)"
        case .tooManyPendingTaskRequests(let kind): return "too many pending \(kind) task requests"
        case .unavailable(let reason): return "background refresh unavailable\(reason.isEmpty ? "" : " (\(reason))")"
        case .modeNotDeclared(let mode): return "background mode not declared: \(mode)"
        case .invalidState(let state): return "not possible in state \(state)"
        case .invalidParameter(let parameter): return "invalid parameter: \(parameter)"
        case .notImplemented(let method): return "not implemented by the daemon: \(method)"
        case .remote(let e): return e.description
        case .cannotConnect(let s): return "cannot connect to bgtaskd: \(s)"
        case .disconnected(let s): return "connection to bgtaskd lost: \(s)"
        case .invalidReply(let s): return "invalid reply from bgtaskd: \(s)"
        }
    }
}

/// Why ``BGTaskScheduler`` refused a request (Apple's `BGTaskScheduler.Error.Code`, plus the cause of any
/// other failure).
public enum BGTaskSchedulerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The identifier is not in `PermittedTaskIdentifiers=`, or the manifest lacks the background mode
    /// the request needs (`fetch` for refresh, `processing` for processing).
    case notPermitted
    /// One refresh and ten processing requests may be pending per app.
    case tooManyPendingTaskRequests
    /// Background App Refresh is off, restricted, or in Low Power Mode for this app.
    case unavailable
    /// Anything else: the daemon could not be reached, or refused for another reason.
    case failed(BGTaskClientError)

    /// Maps a client error to the scheduler's codes.
    public init(_ error: BGTaskClientError) {
        switch error {
        case .notPermitted, .modeNotDeclared: self = .notPermitted
        case .tooManyPendingTaskRequests: self = .tooManyPendingTaskRequests
        case .unavailable: self = .unavailable
        default: self = .failed(error)
        }
    }

    public var description: String {
        switch self {
        case .notPermitted: return "task request not permitted"
        case .tooManyPendingTaskRequests: return "too many pending task requests"
        case .unavailable: return "background refresh unavailable"
        case .failed(let e): return e.description
        }
    }
}
