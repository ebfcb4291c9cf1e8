public import BGTaskProtocol
public import Dispatch
import CSystemd

#if canImport(Glibc)
import Glibc
#endif

/// Who is on the other end of a Unix socket, from SO_PEERCRED.
public struct PeerCredentials: Sendable, Hashable, CustomStringConvertible {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32

    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    public var description: String { "pid \(pid) uid \(uid)" }

    /// Reads the credentials of a connected Unix socket.
    public static func of(fd: Int32) -> PeerCredentials? {
        var cred = bgtaskd_ucred()
        var len = socklen_t(MemoryLayout<bgtaskd_ucred>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 else { return nil }
        return PeerCredentials(pid: cred.pid, uid: cred.uid, gid: cred.gid)
    }
}

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
    /// A client whose unread replies exceed this is disconnected (a stream it does not read).
    public var maxBufferedBytes = 8 * 1024 * 1024
    /// Reading pauses while this many calls wait behind the one being served.
    public var maxPendingCalls = 256

    public init() {}
}

/// A Varlink server on Unix stream sockets, driven by Dispatch sources on one serial queue.
///
/// Sockets are non-blocking; writes are buffered per connection. Calls on one connection are served
/// one at a time in order (pipelining); a connection whose peer does not read its replies is paused,
/// then dropped, and never holds up another.
public final class VarlinkServer: @unchecked Sendable {
    // @unchecked: every mutable field is touched only on `queue`.
    public let queue: DispatchQueue
    public let limits: VarlinkLimits
    public let vendor: String
    public let product: String
    public let version: String
    public let url: String
    private weak var service: (any VarlinkService)?

    private var listeners: [(fd: Int32, source: any DispatchSourceRead)] = []
    private var connections: [UInt64: VarlinkConnection] = [:]
    private var nextConnectionID: UInt64 = 1
    private var descriptions: [String: String] = [:]
    private var methodsByInterface: [String: Set<String>] = [:]
    private var interfaceOrder: [String] = []

    /// Calls received since start.
    public private(set) var callCount = 0
    /// One read buffer for every connection (all reads happen on `queue`): no allocation per event.
    fileprivate let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 16)
    public var connectionCount: Int { connections.count }

    public init(
        queue: DispatchQueue, service: any VarlinkService, limits: VarlinkLimits = VarlinkLimits(),
        vendor: String = "bgtaskd", product: String = "bgtaskd", version: String = "0.1.0",
        url: String = "https://github.com/bgtaskd/bgtaskd"
    ) {
        self.queue = queue
        self.service = service
        self.limits = limits
        self.vendor = vendor
        self.product = product
        self.version = version
        self.url = url
        register(name: Interfaces.serviceName, description: Interfaces.service)
        for (name, description) in service.interfaceDescriptions {
            register(name: name, description: description)
        }
    }

    deinit { readBuffer.deallocate() }

    private func register(name: String, description: String) {
        if descriptions[name] == nil { interfaceOrder.append(name) }
        descriptions[name] = description
        methodsByInterface[name] = Interfaces.methodNames(in: description)
    }

    /// Starts accepting on a listening socket (bound here or passed by systemd). Call on `queue`.
    public func listen(fd: Int32) {
        dispatchPrecondition(condition: .onQueue(queue))
        setNonBlocking(fd)
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [weak self] in self?.acceptPending(fd) }
        source.resume()
        listeners.append((fd, source))
    }

    /// Stops accepting and closes every connection. Call on `queue`.
    public func shutdown() {
        dispatchPrecondition(condition: .onQueue(queue))
        for l in listeners { l.source.cancel() }
        listeners.removeAll()
        for c in Array(connections.values) { c.close() }
    }

    private func acceptPending(_ listenFD: Int32) {
        // Bounded so that a connection storm cannot monopolise the queue.
        for _ in 0..<64 {
            let fd = accept(listenFD, nil, nil)
            if fd < 0 { return }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            setNonBlocking(fd)
            let peer = PeerCredentials.of(fd: fd) ?? PeerCredentials(pid: 0, uid: UInt32.max, gid: UInt32.max)
            let id = nextConnectionID
            nextConnectionID += 1
            let c = VarlinkConnection(id: id, fd: fd, peer: peer, server: self)
            connections[id] = c
            c.start()
        }
    }

    fileprivate func forget(_ connection: VarlinkConnection) {
        guard connections.removeValue(forKey: connection.id) != nil else { return }
        service?.connectionClosed(connection)
    }

    fileprivate func dispatch(_ request: VarlinkRequest) {
        callCount += 1
        let call = request.call
        let interface = String(call.interface)
        guard let methods = methodsByInterface[interface] else {
            request.fail(.interfaceNotFound(interface))
            return
        }
        guard methods.contains(String(call.methodName)) else {
            request.fail(.methodNotFound(call.method))
            return
        }
        if interface == Interfaces.serviceName {
            serveServiceInterface(request)
            return
        }
        guard let service else {
            request.fail(.methodNotImplemented(call.method))
            return
        }
        service.handle(request)
    }

    private func serveServiceInterface(_ request: VarlinkRequest) {
        let call = request.call
        switch call.methodName {
        case "GetInfo":
            request.reply(
                VarlinkReply(parameters: [
                    "vendor": .string(vendor), "product": .string(product), "version": .string(version),
                    "url": .string(url), "interfaces": .array(interfaceOrder.map { .string($0) }),
                ]))
        case "GetInterfaceDescription":
            guard case .string(let name)? = call.parameters["interface"] else {
                request.fail(.invalidParameter("interface"))
                return
            }
            guard let d = descriptions[name] else {
                request.fail(.interfaceNotFound(name))
                return
            }
            request.reply(VarlinkReply(parameters: ["description": .string(d)]))
        default:
            request.fail(.methodNotFound(call.method))
        }
    }
}

/// A call being served, with the means to answer it. Replies after the call has been answered
/// finally (or after its connection closed) are dropped, so a late answer never lands on another call.
public struct VarlinkRequest: Sendable {
    public let call: VarlinkCall
    public let connection: VarlinkConnection
    let serial: UInt64

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

/// One client connection. Lives on the server's queue.
public final class VarlinkConnection: @unchecked Sendable, Hashable, CustomStringConvertible {
    public let id: UInt64
    public let peer: PeerCredentials
    private let fd: Int32
    private unowned let server: VarlinkServer
    private var framer: VarlinkFramer
    private var readSource: (any DispatchSourceRead)?
    private var writeSource: (any DispatchSourceWrite)?
    private var readPaused = false
    private var writeArmed = false
    private var outBuffer: [UInt8] = []
    private var outStart = 0
    private var pending: [VarlinkCall] = []
    private var pendingHead = 0
    /// The call being served; nil when idle.
    private var current: VarlinkCall?
    /// Serial of the call being served.
    public private(set) var currentSerial: UInt64?
    private var nextSerial: UInt64 = 1
    private var closeAfterFlush = false
    /// The peer will send nothing more; close once its calls are answered and written.
    private var peerFinishedSending = false
    public private(set) var isClosed = false
    /// Anything the service wants to remember about this connection (e.g. the app it checked in as).
    public var userInfo: [String: String] = [:]

    init(id: UInt64, fd: Int32, peer: PeerCredentials, server: VarlinkServer) {
        self.id = id
        self.fd = fd
        self.peer = peer
        self.server = server
        self.framer = VarlinkFramer(maxMessageSize: server.limits.maxMessageSize)
    }

    public static func == (a: VarlinkConnection, b: VarlinkConnection) -> Bool { a === b }
    public func hash(into h: inout Hasher) { h.combine(id) }
    public var description: String { "connection \(id) (\(peer))" }

    func start() {
        let rs = DispatchSource.makeReadSource(fileDescriptor: fd, queue: server.queue)
        rs.setEventHandler { [weak self] in self?.readAvailable() }
        readSource = rs
        let ws = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: server.queue)
        ws.setEventHandler { [weak self] in self?.flush() }
        writeSource = ws
        // Both sources share the fd; it is closed only after both are cancelled.
        let fd = self.fd
        let group = DispatchGroup()
        group.enter()
        group.enter()
        rs.setCancelHandler { group.leave() }
        ws.setCancelHandler { group.leave() }
        group.notify(queue: server.queue) { closeDeferred(fd) }
        rs.resume()
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
                let chunkCount = buffer.count
                if !drainFramer() { return }
                if readPaused { return }
                if n < chunkCount { return }
            } else if n == 0 {
                // EOF: the peer sent all it will send (it may have half-closed and still read).
                // Calls already received are answered; a partial message is dropped.
                peerFinishedSending = true
                pauseReading()
                _ = drainFramer()
                closeIfDrained()
                return
            } else {
                let e = errno
                if e == EAGAIN || e == EWOULDBLOCK || e == EINTR { return }
                close()
                return
            }
        }
    }

    /// Decodes complete messages; false when the connection was closed.
    private func drainFramer() -> Bool {
        while pending.count - pendingHead < server.limits.maxPendingCalls {
            let message: ArraySlice<UInt8>?
            do {
                message = try framer.next()
            } catch {
                // Oversized: nothing after it can be trusted.
                close()
                return false
            }
            guard let message else { break }
            let call: VarlinkCall
            do {
                call = try VarlinkCall.decode(message)
            } catch {
                switch error {
                case .invalidJSON, .notAnObject:
                    close()
                    return false
                case .missingMethod:
                    enqueueFailure(.invalidParameter("method"))
                    continue
                case .invalidField(let f):
                    enqueueFailure(.invalidParameter(f))
                    continue
                }
            }
            pending.append(call)
        }
        if pending.count - pendingHead >= server.limits.maxPendingCalls { pauseReading() }
        serveNext()
        return !isClosed
    }

    private func enqueueFailure(_ error: VarlinkError) {
        // An invalid call still takes its turn so that replies stay in order.
        var placeholder = VarlinkCall(method: "")
        placeholder.parameters = ["__error": .string(error.name), "__parameters": .object(error.parameters)]
        pending.append(placeholder)
    }

    private func serveNext() {
        while current == nil, pendingHead < pending.count, !isClosed {
            let call = pending[pendingHead]
            pendingHead += 1
            if pendingHead > 64, pendingHead * 2 > pending.count {
                pending.removeFirst(pendingHead)
                pendingHead = 0
            }
            let serial = nextSerial
            nextSerial += 1
            current = call
            currentSerial = serial
            if call.method.isEmpty, case .string(let name)? = call.parameters["__error"] {
                send(.failure(VarlinkError(name, call.parameters["__parameters"]?.objectValue ?? [:])), serial: serial)
                continue
            }
            server.dispatch(VarlinkRequest(call: call, connection: self, serial: serial))
            if call.oneway, currentSerial == serial {
                // Oneway: nothing is sent back; the next call may run.
                current = nil
                currentSerial = nil
            }
        }
        if readPaused, pending.count - pendingHead < server.limits.maxPendingCalls / 2,
            outBuffer.count - outStart < server.limits.pauseReadingAboveBufferedBytes
        {
            resumeReading()
        }
        if peerFinishedSending {
            // Decode what is left now that there is room in the queue.
            if framer.bufferedCount > 0, pending.count - pendingHead < server.limits.maxPendingCalls { drainLater() }
            closeIfDrained()
        }
    }

    /// After the peer's EOF: close once nothing is left to serve or write.
    private func closeIfDrained() {
        guard peerFinishedSending, !isClosed, current == nil, pendingHead >= pending.count,
            outBuffer.count - outStart == 0, !drainScheduled
        else { return }
        // Complete messages may remain (drained next turn); a partial one never completes.
        if framer.hasCompleteMessage { return }
        close()
    }

    // MARK: replying

    /// Sends a reply to the call `serial`. A final reply (continues == false) lets the next call run.
    func send(_ reply: VarlinkReply, serial: UInt64) {
        guard !isClosed, let call = current, currentSerial == serial else { return }
        var r = reply
        if !call.more || r.error != nil { r.continues = false }
        if !r.continues {
            current = nil
            currentSerial = nil
        }
        if call.oneway {
            if !r.continues { serveNextLater() }
            return
        }
        r.append(to: &outBuffer)
        flush()
        if !r.continues { serveNextLater() }
    }

    /// Answers the call being served (the server's own replies to invalid calls).
    fileprivate func fail(_ error: VarlinkError) {
        if let serial = currentSerial { send(.failure(error), serial: serial) }
    }

    fileprivate func reply(_ reply: VarlinkReply) {
        if let serial = currentSerial { send(reply, serial: serial) }
    }

    private var serveScheduled = false
    private func serveNextLater() {
        // Served on the next turn of the queue, so that a handler replying synchronously does not
        // recurse through a long pipeline.
        guard !serveScheduled, pendingHead < pending.count else {
            if readPaused { serveNext() }
            return
        }
        serveScheduled = true
        server.queue.async { [weak self] in
            guard let self else { return }
            self.serveScheduled = false
            self.serveNext()
        }
    }

    private func flush() {
        guard !isClosed else { return }
        while outStart < outBuffer.count {
            let n = outBuffer.withUnsafeBytes { buf in
                write(fd, buf.baseAddress! + outStart, buf.count - outStart)
            }
            if n > 0 {
                outStart += n
                continue
            }
            let e = errno
            if n < 0 && e == EINTR { continue }
            if n < 0 && (e == EAGAIN || e == EWOULDBLOCK) { break }
            close()
            return
        }
        let buffered = outBuffer.count - outStart
        if buffered == 0 {
            outBuffer.removeAll(keepingCapacity: outBuffer.capacity <= 65536)
            outStart = 0
            if writeArmed { writeSource?.suspend(); writeArmed = false }
            if closeAfterFlush { close(); return }
            if peerFinishedSending { closeIfDrained(); if isClosed { return } }
            if readPaused && pending.count - pendingHead < server.limits.maxPendingCalls { resumeReading() }
            return
        }
        if outStart > 65536 && outStart * 2 > outBuffer.count {
            outBuffer.removeFirst(outStart)
            outStart = 0
        }
        if buffered > server.limits.maxBufferedBytes {
            // The client does not read what it asked for.
            close()
            return
        }
        if buffered > server.limits.pauseReadingAboveBufferedBytes { pauseReading() }
        if !writeArmed { writeSource?.resume(); writeArmed = true }
    }

    private func pauseReading() {
        guard !readPaused, !isClosed else { return }
        readSource?.suspend()
        readPaused = true
    }

    private func resumeReading() {
        guard readPaused, !isClosed, !peerFinishedSending else { return }
        readSource?.resume()
        readPaused = false
        // Complete calls may already wait in the framer (read before the pause) while the socket has
        // nothing new to wake the read source: decode them on the next turn, or they wait forever.
        if framer.bufferedCount > 0 { drainLater() }
    }

    private var drainScheduled = false
    private func drainLater() {
        guard !drainScheduled else { return }
        drainScheduled = true
        server.queue.async { [weak self] in
            guard let self else { return }
            self.drainScheduled = false
            guard !self.isClosed, !self.readPaused || self.peerFinishedSending else { return }
            _ = self.drainFramer()
        }
    }

    /// Bytes of replies not yet taken by the peer.
    public var bufferedReplyBytes: Int { outBuffer.count - outStart }

    /// Closes the connection at once; the service hears `connectionClosed`.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        // Sources must be resumed before cancellation completes.
        if readPaused { readSource?.resume(); readPaused = false }
        if !writeArmed { writeSource?.resume(); writeArmed = true }
        readSource?.cancel()
        writeSource?.cancel()
        shutdown(fd, Int32(SHUT_RDWR))
        pending.removeAll()
        pendingHead = 0
        current = nil
        currentSerial = nil
        server.forget(self)
    }
}

/// Closes `fd` a little after its sources were cancelled. libdispatch's Linux epoll backend keeps
/// per-fd bookkeeping ("muxnotes") that a new source on a reused fd number can collide with while
/// the old one is still being torn down (swift-corelibs-libdispatch #833, #949; seen here once as
/// "Source finalized twice" under rapid connection churn). Not reusing the number at once avoids it.
func closeDeferred(_ fd: Int32) {
    DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(250)) { _ = Glibc.close(fd) }
}

func setNonBlocking(_ fd: Int32) {
    let flags = fcntl(fd, F_GETFL)
    if flags >= 0 { _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
}
