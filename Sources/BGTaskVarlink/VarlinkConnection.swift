import BGTaskProtocol
import Dispatch
import CSystemd

#if canImport(Glibc)
import Glibc
#endif

/// One client connection. Lives on the server's queue.
///
/// Every stored `var` is the queue's alone, and release builds drop Swift's run-time exclusivity check on
/// it (`@exclusivity(unchecked)` unless `DEBUG`): with VarlinkServer's and DaemonService's it was a tenth of
/// the instructions of a call (bench/README.md, "Rows 1 and 2b under callgrind"). Debug builds, which every
/// test runs, keep the check.
public final class VarlinkConnection: @unchecked Sendable, Hashable, CustomStringConvertible {
    public let id: UInt64
    public let peer: PeerCredentials
    let fd: Int32
    unowned let server: VarlinkServer
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Framing and decoding (BGTaskProtocol's `VarlinkInboundDecoder`, as the fuzz target runs it).
    var framer: VarlinkInboundDecoder
    /// Where the connection is in its life. A value, not flags: sd-varlink's `VarlinkState` is the model.
    enum Phase: Equatable {
        /// Reading and serving.
        case open
        /// The peer sent EOF (it may have half-closed and still read): the calls it sent are answered and
        /// written, then the connection closes.
        case draining
        /// Closed; the service heard `connectionClosed`.
        case closed
    }
    /// Why reading is stopped, if it is.
    struct ReadPauses: OptionSet {
        let rawValue: UInt8
        /// Its queue of calls is full, or its unread replies are over the bound.
        static let backpressure = ReadPauses(rawValue: 1)
        /// Held by the server (the denial budget): not read, no call served, until released.
        static let held = ReadPauses(rawValue: 2)
    }
    /// What waits to be served, in order: calls, and messages refused by the decoder, which take their
    /// turn so that replies stay in order.
    enum Inbound {
        case call(VarlinkCall)
        case rejected(VarlinkError)
    }
    /// The call being served and its serial.
    struct Serving {
        let call: VarlinkCall
        let serial: UInt64
    }

    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var phase = Phase.open
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    private(set) var readPauses: ReadPauses = []
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// The peer closed its end altogether (EPOLLHUP): nothing sent can reach it any more.
    var peerGone = false
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// The epoll registration of `fd`: nil while out of the server's epoll set, else the events asked for.
    /// Out of it while reading is paused or once the peer's hang-up was seen: epoll reports a hang-up
    /// whatever the mask, which would spin. In it with an empty mask after the peer's EOF, so that its
    /// hang-up (the peer closed, not only shut down its sending side) is seen.
    var registered: UInt32?
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var outBuffer: [UInt8] = []
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var outStart = 0
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Where the newest reply begins in `outBuffer` (what is before it and after `outStart` is older replies).
    /// The parts of one document sent at once (`VarlinkRequest.replyInParts`) count as one reply.
    var newestReplyStart = 0
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// While a document's parts are sent: whether its first part was (`newestReplyStart` stays at it).
    var partsBegun: Bool?
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var pending: [Inbound] = []
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var pendingHead = 0
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// The call being served; nil when idle.
    var current: Serving?
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var nextSerial: UInt64 = 1
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// True while `serveNext` runs (a reply it causes must not re-enter it).
    var serving = false
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// In the server's list of connections to serve, or to write, this turn.
    var isRunnable = false
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var isDirty = false
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// An in-memory connection (no socket) hands its replies here instead of writing them.
    var inMemoryReplies: ((VarlinkReply) -> Void)?
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Anything the service wants to remember about this connection (e.g. the app it checked in as).
    public var userInfo: [String: String] = [:]
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Since when part of a message waits for the rest (monotonic µs); nil: none does.
    internal private(set) var incompleteSinceUSec: Int64?

    public var isClosed: Bool { phase == .closed }
    /// Held by the server (the denial budget).
    public var isHeld: Bool { readPauses.contains(.held) }
    /// Serial of the call being served.
    public var currentSerial: UInt64? { current?.serial }
    var readingPaused: Bool { !readPauses.isEmpty }
    var pendingCount: Int { pending.count - pendingHead }
    /// Every call received is answered: none being served, none waiting, nothing undecoded in the framer.
    var isAnswered: Bool { current == nil && pendingHead >= pending.count && !isRunnable && !framer.hasCompleteMessage }

    /// Held (or released) by the server.
    func setHeld(_ on: Bool) {
        guard isHeld != on, !isClosed else { return }
        if on { readPauses.insert(.held) } else { readPauses.remove(.held) }
        if !on { restartIncompleteClock(monotonicNowUSec()) }
        updateInterest()
        // Calls decoded (or bytes read) while held wait: serve them now.
        if !on, pendingCount > 0 || framer.bufferedCount > 0 { server.markRunnable(self) }
    }

    /// Reading resumed: the rest of the message could not arrive while it was paused.
    func restartIncompleteClock(_ now: Int64) {
        if incompleteSinceUSec != nil { incompleteSinceUSec = now }
    }

    init(id: UInt64, fd: Int32, peer: PeerCredentials, server: VarlinkServer) {
        self.id = id
        self.fd = fd
        self.peer = peer
        self.server = server
        self.framer = VarlinkInboundDecoder(maxMessageSize: server.limits.maxMessageSize)
    }

    public static func == (a: VarlinkConnection, b: VarlinkConnection) -> Bool { a === b }
    public func hash(into h: inout Hasher) { h.combine(id) }
    public var description: String { "connection \(id) (\(peer))" }

    /// Joins the server's epoll set; false if that failed (the caller closes the descriptor).
    func start() -> Bool {
        updateInterest()
        return registered != nil
    }

    func updateInterest() {
        guard !isClosed else { return }
        var want: UInt32 = 0
        if readPauses.isEmpty && phase == .open { want |= BGTASKD_EPOLLIN }
        if outBuffer.count > outStart { want |= BGTASKD_EPOLLOUT }
        // With an empty mask only the hang-up can be reported: wanted after an EOF (a stream still open
        // on a connection whose peer is gone must be noticed), not while paused or once seen.
        let stay = want != 0 || (readPauses.isEmpty && !peerGone)
        guard stay else {
            if registered != nil { _ = server.epollControl(BGTASKD_EPOLL_CTL_DEL, fd: fd, events: 0, token: id) }
            registered = nil
            return
        }
        if registered == want { return }
        let op = registered == nil ? BGTASKD_EPOLL_CTL_ADD : BGTASKD_EPOLL_CTL_MOD
        if server.epollControl(op, fd: fd, events: want, token: id) == 0 {
            registered = want
        } else {
            close()
        }
    }

    func handleEvents(_ mask: UInt32) {
        if mask & BGTASKD_EPOLLOUT != 0 { flush() }
        guard !isClosed else { return }
        let readable = BGTASKD_EPOLLIN | BGTASKD_EPOLLHUP | BGTASKD_EPOLLERR
        if mask & readable != 0 && readPauses.isEmpty && phase == .open { readAvailable() }
        guard !isClosed else { return }
        if mask & (BGTASKD_EPOLLHUP | BGTASKD_EPOLLERR) != 0 {
            peerGone = true
            finishIfPeerGone()
        }
    }

    /// Once the peer has closed (not only shut down its sending side) and everything it sent was read, a
    /// call that streams (`more`: CheckIn, Monitor) can never end, and nothing written can reach anyone:
    /// the connection closes instead of being kept for ever. A call still being answered closes it when
    /// its reply fails to be written.
    private func finishIfPeerGone() {
        guard peerGone, !isClosed else { return }
        guard phase == .draining else {
            updateInterest()
            return
        }
        if let current, current.call.more {
            close()
            return
        }
        updateInterest()
        closeIfDrained()
    }

    // MARK: reading

    private func readAvailable() {
        guard !isClosed else { return }
        // A few reads per wake-up keep one busy client from starving the others.
        for _ in 0..<4 {
            let buffer = server.readBuffer
            let n = read(fd, buffer.baseAddress, buffer.count)
            if n > 0 {
                framer.append(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                if !drainFramer() { return }
                noteIncomplete()
                if !readPauses.isEmpty { return }
                if n < buffer.count { return }
            } else if n == 0 {
                // EOF: the peer sent all it will send (it may have half-closed and still read).
                // Calls already received are answered; a partial message is dropped. A peer that is
                // gone altogether (POLLHUP: it closed, not just shut down its writing side) reads no
                // reply: a call with `more` (a stream, a manager hold) ends now, not at the next write.
                var probe = pollfd(fd: fd, events: 0, revents: 0)
                if current?.call.more == true, poll(&probe, 1, 0) == 1, probe.revents & Int16(POLLHUP) != 0 {
                    close()
                    return
                }
                phase = .draining
                updateInterest()
                _ = drainFramer()
                closeIfDrained()
                finishIfPeerGone()
                return
            } else {
                let e = errno
                if e == EAGAIN || e == EWOULDBLOCK || e == EINTR { return }
                close()
                return
            }
        }
    }

    /// Decodes complete messages while there is room, then serves; false when the connection closed.
    func drainFramer() -> Bool {
        while pendingCount < server.limits.maxPendingCalls {
            guard let inbound = framer.next() else { break }
            switch inbound {
            case .call(let call):
                pending.append(.call(call))
            case .reject(let error):
                pending.append(.rejected(error))
            case .close:
                // Oversized, invalid JSON or not an object: nothing after it can be trusted.
                if framer.closedForSize { server.noteOversized() }
                close()
                return false
            }
        }
        if pendingCount >= server.limits.maxPendingCalls { pauseReading() }
        serveNext()
        return !isClosed
    }

    /// Tells the server whether part of a message waits for the rest (a client that sends half a message
    /// and stalls is dropped after `incompleteMessageTimeoutUSec`).
    private func noteIncomplete() {
        let partial = framer.bufferedCount > 0 && !framer.hasCompleteMessage
        if partial {
            guard incompleteSinceUSec == nil else { return }
            incompleteSinceUSec = monotonicNowUSec()
            server.noteIncomplete(self, true)
        } else if incompleteSinceUSec != nil {
            incompleteSinceUSec = nil
            server.noteIncomplete(self, false)
        }
    }

    func pauseReading() {
        guard !readPauses.contains(.backpressure), !isClosed else { return }
        readPauses.insert(.backpressure)
        updateInterest()
    }

    func resumeReading() {
        guard readPauses.contains(.backpressure), !isClosed else { return }
        readPauses.remove(.backpressure)
        restartIncompleteClock(monotonicNowUSec())
        updateInterest()
        // Complete calls may already wait in the framer (read before the pause) while the socket has
        // nothing new to report: decode them this round, or they wait forever.
        if framer.bufferedCount > 0 { server.markRunnable(self) }
    }
}
