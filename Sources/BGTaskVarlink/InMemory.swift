public import BGTaskProtocol
import CSystemd

#if canImport(Glibc)
import Glibc
#endif

// MARK: - In memory: the service driven without sockets (tests)

extension VarlinkServer {
    /// A connection without a socket, as if `peer` had connected: its replies go to `replies`, its calls
    /// come from ``serveInMemory(_:on:)``, and ``VarlinkConnection/close()`` ends it as a hang-up would.
    public func inMemoryConnection(peer: PeerCredentials, replies: @escaping (VarlinkReply) -> Void) -> VarlinkConnection {
        let token = takeToken()
        let c = VarlinkConnection(id: token, fd: -1, peer: peer, server: self)
        c.inMemoryReplies = replies
        connections[token] = c
        connectionsByUID[peer.uid, default: 0] += 1
        if peer.uid != 0 { unprivilegedConnections += 1 }
        return c
    }

    /// Serves `call` on an in-memory connection as if it had been read from its socket: the server's own
    /// checks (method known, parameter types), then the service. One call at a time per connection.
    public func serveInMemory(_ call: VarlinkCall, on connection: VarlinkConnection) {
        dispatch(VarlinkRequest(call: call, connection: connection, serial: connection.beginInMemory(call)))
    }
}

extension VarlinkConnection {
    /// The call an in-memory connection serves now; its serial.
    func beginInMemory(_ call: VarlinkCall) -> UInt64 {
        let serial = nextSerial
        nextSerial += 1
        current = Serving(call: call, serial: serial)
        return serial
    }
}
