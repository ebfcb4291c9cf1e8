import BGTaskProtocol
import Dispatch
import CSystemd

#if canImport(Glibc)
import Glibc
#endif

/// What the server hands calls to. Every method runs on the server's queue.
public protocol VarlinkService: AnyObject {
    /// Interface name → description; `org.varlink.service` is served by the server itself.
    var interfaceDescriptions: [(name: String, description: String)] { get }
    /// Handles a call of one of `interfaceDescriptions`' declared methods. The service answers through
    /// `request.reply(_:)`: at once or later, once with `continues == false` (after any number of
    /// `continues == true` replies for a `more` call). Replies to a oneway call are dropped.
    func handle(_ request: VarlinkRequest)
    /// The connection is gone; anything it owned must be released.
    func connectionClosed(_ connection: VarlinkConnection)
}

/// Limits that keep one client from hurting the others.
public struct VarlinkLimits: Sendable {
    /// A message longer than this closes the connection (SPEC §10 MaxMessageSize).
    public var maxMessageSize = 64 * 1024
    /// Reading from a client pauses while this many bytes of replies wait to be written to it.
    public var pauseReadingAboveBufferedBytes = 256 * 1024
    /// A client whose unread replies, the newest one aside, exceed this is disconnected (a stream it does not
    /// read). The newest reply is not counted, nor are the parts of one document sent with it at once
    /// (`VarlinkRequest.replyInParts`): a recording under load (6–10 MB, in parts of 1 MiB) is what the client
    /// asked for, and it reads it.
    public var maxBufferedBytes = 8 * 1024 * 1024
    /// Reading pauses while this many calls wait behind the one being served.
    public var maxPendingCalls = 256
    /// Connections one uid may hold at once; root is exempt (`MaxConnectionsPerUser=`).
    public var maxConnectionsPerUser = 128
    /// A connection that began a message and has not completed it within this many microseconds is
    /// closed (`IncompleteMessageTimeoutSec=`); nil: never. Idle connections are left alone.
    public var incompleteMessageTimeoutUSec: Int64? = 10_000_000
    /// Descriptors never given to client connections: the daemon's own (journal, pidfds, cgroup
    /// files, launches). At most a quarter of RLIMIT_NOFILE.
    public var reservedDescriptors = 64
    /// Of the connections allowed, this many are kept for root (bgtaskctl as root, the launcher's
    /// administrator) once every other user's together reach the rest.
    public var reservedForRoot = 16

    public init() {}
}
