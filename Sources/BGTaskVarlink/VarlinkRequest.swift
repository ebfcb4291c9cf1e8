public import BGTaskProtocol
import Dispatch
import CSystemd

#if canImport(Glibc)
import Glibc
#endif

/// A call being served, with the means to answer it. Replies after the call has been answered
/// finally (or after its connection closed) are dropped, so a late answer never lands on another call.
public struct VarlinkRequest: Sendable {
    public let call: VarlinkCall
    public let connection: VarlinkConnection
    let serial: UInt64

    /// Runs `body`, which sends one document as several replies at once (`continues`): they count as one
    /// reply for `VarlinkLimits.maxBufferedBytes`, so a client reading them at its own pace is not
    /// disconnected for the parts it has not read yet. Replies sent later (a stream's events) count apart.
    public func replyInParts(_ body: () -> Void) { connection.sendingParts(body) }

    /// Sends a reply; for a `more` call, `continues: true` keeps the call open.
    public func reply(_ reply: VarlinkReply) { connection.send(reply, serial: serial) }
    public func reply(_ parameters: [String: JSON] = [:], continues: Bool = false) {
        connection.send(VarlinkReply(parameters: parameters, continues: continues), serial: serial)
    }
    public func fail(_ error: VarlinkError) { connection.send(.failure(error), serial: serial) }
    /// False once the call got its final reply or the connection closed.
    public var isOpen: Bool { !connection.isClosed && connection.currentSerial == serial }
    public var peer: PeerCredentials { connection.peer }
}
