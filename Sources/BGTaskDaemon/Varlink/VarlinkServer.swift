public import BGTaskProtocol
public import Dispatch
import BGTaskConfig
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

/// A Varlink server on Unix stream sockets, driven by one thread of its own on one serial queue.
///
/// Every socket — listeners and connections — sits in one epoll set of the server's own; the server's
/// socket thread (`SocketThread`, issue 15) blocks in `epoll_wait` on it and enters the queue with
/// `queue.sync` when any of them is ready, and one turn serves every ready socket. So a burst from many
/// clients costs one wake-up rather than one per socket, no Dispatch source is made or torn down per
/// connection, and a connection's descriptor is closed as soon as it leaves the set. The queue remains
/// the only owner of the state; the thread only waits.
///
/// Sockets are non-blocking; writes are buffered per connection and written at the end of the turn
/// (pipelined replies leave in one write). Calls on one connection are served one at a time in order;
/// a connection whose peer does not read its replies is paused, then dropped, and never holds up another.
public final class VarlinkServer: @unchecked Sendable {
    // @unchecked: every mutable field is touched only on `queue`.
    public let queue: DispatchQueue
    /// Changed on `queue` only (a reload); the connection bounds apply to connections accepted later.
    public var limits: VarlinkLimits
    public let vendor: String
    public let product: String
    public let version: String
    public let url: String
    private weak var service: (any VarlinkService)?

    private let epfd: Int32
    /// Waits on `epfd` and runs `turn(count:)` on `queue` (SocketThread.swift).
    private let socketThread: SocketThread
    private var listeners: [UInt64: Int32] = [:]
    private var connections: [UInt64: VarlinkConnection] = [:]
    private var nextToken: UInt64 = 1
    private var descriptions: [String: String] = [:]
    private var methodsByInterface: [String: Set<String>] = [:]
    /// Every declared method, fully qualified.
    private var knownMethods: Set<String> = []
    /// The descriptions parsed: every call is checked against its method's declaration (issue 11).
    private var registry = VarlinkInterfaceRegistry()
    private var interfaceOrder: [String] = []

    /// True while a turn runs: replies are collected and written at its end.
    fileprivate private(set) var inTurn = false
    private var runnable: [VarlinkConnection] = []
    private var dirty: [VarlinkConnection] = []
    private var turnScheduled = false

    /// Run at the start and at the end of every turn, once the turn's replies were written (the daemon
    /// holds its journal writer's wake-ups in between, so that a reply never waits behind the log line
    /// it caused).
    public var beforeTurn: (() -> Void)?
    public var afterTurn: (() -> Void)?

    /// Paused by `pauseIO()`: sockets are not read and no further call is served (replies already
    /// made are still written).
    public private(set) var ioPaused = false

    /// Stops reading every client and serving their calls until `resumeIO()` (the journal is
    /// congested). Call on `queue`.
    public func pauseIO() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !ioPaused else { return }
        ioPaused = true
        socketThread.pause()
    }

    /// Reads and serves again. Call on `queue`.
    public func resumeIO() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard ioPaused else { return }
        ioPaused = false
        socketThread.resume()
        let now = Monotonic.nowUSec()
        for c in incomplete.values { c.restartIncompleteClock(now) }
        if !runnable.isEmpty { scheduleTurn() }
    }

    /// The socket thread's id once it runs (0 before; tests).
    var socketThreadID: Int32 { socketThread.tid }

    /// Calls received since start.
    public private(set) var callCount = 0

    // issue 11: bounds on connections, and no busy loop when out of descriptors.
    /// Open connections per uid.
    private var connectionsByUID: [UInt32: Int] = [:]
    /// Open connections of uids other than root.
    private var unprivilegedConnections = 0
    /// Connections allowed at once (from RLIMIT_NOFILE at start, less `reservedDescriptors`).
    public let maxConnections: Int
    /// Connections refused since start (a uid at its bound, every connection slot taken).
    public private(set) var refusedConnections = 0
    /// Connections dropped since start for a message left half-sent (`incompleteMessageTimeoutUSec`).
    public private(set) var timedOutConnections = 0
    /// Connections closed since start for a message over `maxMessageSize`.
    public private(set) var oversizedConnections = 0
    /// Connections held (`hold(_:)`): not read and none of their calls served until `releaseHeld()`.
    private var held: [UInt64: VarlinkConnection] = [:]
    /// Uids whose new connections are held from the start until `releaseHeld()`.
    private var heldUIDs: Set<UInt32> = []
    /// Processes whose new connections are held until the denial budget's interval ends.
    private struct HeldProcess: Hashable { var uid: UInt32; var pid: Int32 }
    private var heldProcesses: Set<HeldProcess> = []
    /// True while accept(2) failed for want of descriptors: the listeners are out of the epoll set
    /// (they would be reported ready in every turn, a busy loop) until a connection closes or 100 ms pass.
    public private(set) var acceptPaused = false
    /// Retries accepting while paused. Made and armed once at start: out of descriptors, libdispatch
    /// could not make the timer descriptor a first timer on its clock needs.
    private var acceptRetryTimer: (any DispatchSourceTimer)?
    /// Connections holding part of a message, and since when (monotonic µs).
    private var incomplete: [UInt64: VarlinkConnection] = [:]
    private var incompleteTimer: (any DispatchSourceTimer)?
    private var incompleteTimerArmed = false
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
        var rl = rlimit()
        let soft = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &rl) == 0 && rl.rlim_cur < 1 << 30 ? Int(rl.rlim_cur) : 1024
        maxConnections = max(8, soft - min(limits.reservedDescriptors, soft / 4))
        self.vendor = vendor
        self.product = product
        self.version = version
        self.url = url
        // Fails only when the process is out of descriptors or memory at start-up.
        guard let thread = SocketThread() else {
            preconditionFailure("epoll_create1/eventfd: \(String(cString: strerror(errno)))")
        }
        socketThread = thread
        epfd = thread.epfd
        register(name: Interfaces.serviceName, description: Interfaces.service)
        for (name, description) in service.interfaceDescriptions {
            register(name: name, description: description)
        }
        // The thread holds the server weakly: it stops when the server goes (deinit) or shuts down.
        let started = thread.start(queue: queue) { [weak self] count in
            guard let self else { return false }
            self.turn(count: count)
            return true
        }
        precondition(started, "pthread_create failed at start-up")
        let retry = DispatchSource.makeTimerSource(queue: queue)
        retry.setEventHandler { [weak self] in
            guard let self, self.acceptPaused else { return }
            self.resumeAccepting()
        }
        retry.schedule(deadline: .now())
        retry.resume()
        acceptRetryTimer = retry
    }

    deinit {
        socketThread.stop()
        acceptRetryTimer?.cancel()
        if let t = incompleteTimer {
            if !incompleteTimerArmed { t.resume() }
            t.cancel()
        }
        readBuffer.deallocate()
    }

    private func register(name: String, description: String) {
        if descriptions[name] == nil { interfaceOrder.append(name) }
        descriptions[name] = description
        let methods = Interfaces.methodNames(in: description)
        methodsByInterface[name] = methods
        for m in methods { knownMethods.insert(name + "." + m) }
        do {
            try registry.register(description: description)
        } catch {
            // The descriptions are the program's own (VarlinkSignatureTests parses every one).
            assertionFailure("interface \(name): \(error)")
        }
    }

    /// Starts accepting on a listening socket (bound here or passed by systemd). Call on `queue`.
    public func listen(fd: Int32) {
        dispatchPrecondition(condition: .onQueue(queue))
        setNonBlocking(fd)
        let token = takeToken()
        if epollControl(BGTASKD_EPOLL_CTL_ADD, fd: fd, events: BGTASKD_EPOLLIN, token: token) == 0 {
            listeners[token] = fd
        }
    }

    /// Stops accepting, closes every connection and ends the socket thread (without waiting for it:
    /// see SocketThread). The server serves nothing afterwards. Call on `queue`.
    public func shutdown() {
        dispatchPrecondition(condition: .onQueue(queue))
        for (_, fd) in listeners { _ = epollControl(BGTASKD_EPOLL_CTL_DEL, fd: fd, events: 0, token: 0) }
        listeners.removeAll()
        for c in Array(connections.values) { c.close() }
        socketThread.stop()
    }

    private func takeToken() -> UInt64 {
        defer { nextToken += 1 }
        return nextToken
    }

    fileprivate func epollControl(_ op: Int32, fd: Int32, events: UInt32, token: UInt64) -> Int32 {
        bgtaskd_epoll_ctl(epfd, op, fd, events, token)
    }

    // MARK: turns

    /// One wake-up of the socket thread, with the `count` events its `epoll_wait` returned: serve
    /// every ready socket, then write what they were answered. Paused (`pauseIO()`), nothing is read:
    /// the sockets stay ready and are reported again after `resumeIO()`.
    private func turn(count n: Int) {
        guard !ioPaused else { return }
        beforeTurn?()
        inTurn = true
        if n > 0 {
            var ready: [Int32] = []
            for i in 0..<n {
                let token = socketThread.tokens[i]
                let mask = socketThread.masks[i]
                if let c = connections[token] {
                    c.handleEvents(mask)
                } else if let fd = listeners[token] {
                    ready.append(fd)
                }
                // Else: closed earlier in this turn.
            }
            // New connections after the hang-ups of this turn: a slot freed by a client that has gone
            // is free for the one that connected after it.
            for fd in ready { acceptPending(fd) }
        }
        finishTurn()
    }

    /// Serves connections with calls waiting, writes every buffered reply, runs `afterTurn`.
    private func finishTurn() {
        inTurn = true
        var rounds = 0
        while !runnable.isEmpty || !dirty.isEmpty {
            // Bounded: a pipeline deeper than this continues on the next turn, after timers and signals.
            // Paused: the runnable wait for `resumeIO()`.
            if rounds == 16 || ioPaused {
                if !runnable.isEmpty && !ioPaused { scheduleTurn() }
                writeDirty()
                break
            }
            rounds += 1
            let serve = runnable
            runnable.removeAll(keepingCapacity: true)
            for c in serve {
                c.isRunnable = false
                c.run()
            }
            writeDirty()
        }
        // What is still dirty (after the bound) is written now: a reply is never held back.
        writeDirty()
        inTurn = false
        afterTurn?()
    }

    /// Writes the replies collected this turn (a write can close a connection, whose service then
    /// answers others: loop until nothing is left).
    private func writeDirty() {
        while !dirty.isEmpty {
            let write = dirty
            dirty.removeAll(keepingCapacity: true)
            for c in write {
                c.isDirty = false
                c.flush()
            }
        }
    }

    private func scheduleTurn() {
        guard !turnScheduled else { return }
        turnScheduled = true
        queue.async { [weak self] in
            guard let self else { return }
            self.turnScheduled = false
            self.beforeTurn?()
            self.finishTurn()
        }
    }

    /// `c` has calls to decode or serve: this turn, or a turn of its own when called outside one.
    fileprivate func markRunnable(_ c: VarlinkConnection) {
        if !c.isRunnable {
            c.isRunnable = true
            runnable.append(c)
        }
        if !inTurn { scheduleTurn() }
    }

    /// `c` has replies to write at the end of this turn.
    fileprivate func markDirty(_ c: VarlinkConnection) {
        guard !c.isDirty else { return }
        c.isDirty = true
        dirty.append(c)
    }

    private func acceptPending(_ listenFD: Int32) {
        // Bounded so that a connection storm cannot monopolise the queue (the listener stays ready:
        // the rest are taken next turn).
        for _ in 0..<64 {
            let fd = bgtaskd_accept_nonblocking(listenFD)
            if fd < 0 {
                let e = errno
                if e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM { pauseAccepting() }
                return
            }
            let peer = PeerCredentials.of(fd: fd) ?? PeerCredentials(pid: 0, uid: UInt32.max, gid: UInt32.max)
            guard admits(peer) else {
                // Refused: closed at once, so that the client hears it rather than waiting.
                refusedConnections += 1
                Glibc.close(fd)
                continue
            }
            let token = takeToken()
            let c = VarlinkConnection(id: token, fd: fd, peer: peer, server: self)
            guard c.start() else {
                Glibc.close(fd)
                continue
            }
            connections[token] = c
            connectionsByUID[peer.uid, default: 0] += 1
            if peer.uid != 0 { unprivilegedConnections += 1 }
            if heldUIDs.contains(peer.uid) || heldProcesses.contains(HeldProcess(uid: peer.uid, pid: peer.pid)) { hold(c) }
        }
    }

    // MARK: holding a connection (the denial budget)

    /// Stops reading `connection` and serving its calls (its current call, if any, is answered as usual;
    /// replies and stream events are still written) until ``releaseHeld()``; the peer's further calls wait
    /// in its socket. Connections opened meanwhile by its process (`newConnectionsOfProcess`) or by any
    /// process of its uid (`newConnectionsOfUID`) are held too. Call on `queue`.
    public func hold(_ connection: VarlinkConnection, newConnectionsOfProcess: Bool = false, newConnectionsOfUID: Bool = false) {
        dispatchPrecondition(condition: .onQueue(queue))
        if newConnectionsOfProcess { heldProcesses.insert(HeldProcess(uid: connection.peer.uid, pid: connection.peer.pid)) }
        if newConnectionsOfUID { heldUIDs.insert(connection.peer.uid) }
        guard !connection.isClosed, held[connection.id] == nil else { return }
        held[connection.id] = connection
        connection.setHeld(true)
    }

    /// Reads and serves every held connection again, and new connections of every process and uid. Call on `queue`.
    public func releaseHeld() {
        dispatchPrecondition(condition: .onQueue(queue))
        heldUIDs.removeAll()
        heldProcesses.removeAll()
        let release = held.values.sorted { $0.id < $1.id }
        held.removeAll()
        for c in release { c.setHeld(false) }
    }

    /// Connections held now (tests).
    public var heldConnectionCount: Int { held.count }

    /// issue 11: one uid holds at most `maxConnectionsPerUser` connections, and all but root together
    /// at most `maxConnections - reservedForRoot`: one user cannot take every descriptor, and root
    /// (bgtaskctl) still gets in. An app's connections count for its own uid only.
    private func admits(_ peer: PeerCredentials) -> Bool {
        if connections.count >= maxConnections { return false }
        if peer.uid == 0 { return true }
        if unprivilegedConnections >= maxConnections - min(limits.reservedForRoot, maxConnections / 2) { return false }
        return connectionsByUID[peer.uid, default: 0] < limits.maxConnectionsPerUser
    }

    /// Out of descriptors: the listeners turn edge-triggered (a pending connection would keep them
    /// ready, and every turn would fail again at once: a busy loop), so that only a new connection, a
    /// connection closing or the 100 ms retry try again. Clients wait in the backlog meanwhile.
    private func pauseAccepting() {
        guard !acceptPaused else { return }
        acceptPaused = true
        for (token, fd) in listeners {
            _ = epollControl(BGTASKD_EPOLL_CTL_MOD, fd: fd, events: BGTASKD_EPOLLIN | BGTASKD_EPOLLET, token: token)
        }
        acceptRetryTimer?.schedule(deadline: .now() + .milliseconds(100), leeway: .milliseconds(10))
    }

    private func resumeAccepting() {
        guard acceptPaused else { return }
        acceptPaused = false
        for (token, fd) in listeners { _ = epollControl(BGTASKD_EPOLL_CTL_MOD, fd: fd, events: BGTASKD_EPOLLIN, token: token) }
    }

    fileprivate func forget(_ connection: VarlinkConnection) {
        guard connections.removeValue(forKey: connection.id) != nil else { return }
        let uid = connection.peer.uid
        if let n = connectionsByUID[uid] { connectionsByUID[uid] = n > 1 ? n - 1 : nil }
        if uid != 0 { unprivilegedConnections -= 1 }
        incomplete[connection.id] = nil
        held[connection.id] = nil
        // A descriptor is free again.
        if acceptPaused { resumeAccepting() }
        service?.connectionClosed(connection)
    }

    /// A connection is closed for a message over `maxMessageSize` (counted for Stats).
    fileprivate func noteOversized() {
        oversizedConnections += 1
    }

    // MARK: messages left half-sent

    /// `c` holds part of a message (or no longer does).
    fileprivate func noteIncomplete(_ c: VarlinkConnection, _ partial: Bool) {
        if partial {
            incomplete[c.id] = c
            armIncompleteTimer()
        } else {
            incomplete[c.id] = nil
        }
    }

    /// One timer for every connection holding part of a message, running only while there is one.
    private func armIncompleteTimer() {
        guard let timeout = limits.incompleteMessageTimeoutUSec, !incompleteTimerArmed else { return }
        let period = DispatchTimeInterval.microseconds(Int(min(max(timeout / 4, 50_000), 1_000_000)))
        if incompleteTimer == nil {
            let t = DispatchSource.makeTimerSource(queue: queue)
            t.setEventHandler { [weak self] in self?.sweepIncomplete() }
            incompleteTimer = t
            t.schedule(deadline: .now() + period, repeating: period, leeway: .milliseconds(20))
            t.resume()
        } else {
            incompleteTimer?.schedule(deadline: .now() + period, repeating: period, leeway: .milliseconds(20))
            incompleteTimer?.resume()
        }
        incompleteTimerArmed = true
    }

    private func sweepIncomplete() {
        let now = Monotonic.nowUSec()
        // While the server does not read (journal congestion) or a connection is paused (its replies
        // unread, its queue full), the rest of a message cannot arrive: that time does not count.
        if let timeout = limits.incompleteMessageTimeoutUSec, !ioPaused {
            for c in Array(incomplete.values) where !c.readingPaused && c.incompleteSinceUSec.map({ now - $0 >= timeout }) == true {
                // The partial message is dropped with its connection; calls already answered stay answered.
                timedOutConnections += 1
                c.close()
            }
        }
        if incomplete.isEmpty || limits.incompleteMessageTimeoutUSec == nil, incompleteTimerArmed {
            incompleteTimer?.suspend()
            incompleteTimerArmed = false
        }
    }

    fileprivate func dispatch(_ request: VarlinkRequest) {
        callCount += 1
        let call = request.call
        // One hash of the whole name on the common path; the interface is looked at only for errors.
        guard knownMethods.contains(call.method) else {
            let interface = String(call.interface)
            if methodsByInterface[interface] == nil {
                request.fail(.interfaceNotFound(interface))
            } else {
                request.fail(.methodNotFound(call.method))
            }
            return
        }
        // issue 11: `upgrade` and parameters of the wrong type, for every method, before any handler.
        if let error = registry.check(call) {
            request.fail(error)
            return
        }
        if call.interface == Interfaces.serviceName {
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
    /// Framing and decoding (BGTaskProtocol's `VarlinkInboundDecoder`, as the fuzz target runs it).
    private var framer: VarlinkInboundDecoder
    /// The epoll events registered for `fd` while `inSet`.
    private var registered: UInt32 = 0
    /// In the server's epoll set. Out of it while reading is paused or once the peer's hang-up was seen:
    /// epoll reports a hang-up whatever the mask, which would spin. In it with an empty mask after the
    /// peer's EOF, so that its hang-up (the peer closed, not only shut down its sending side) is seen.
    private var inSet = false
    /// The peer closed its end altogether (EPOLLHUP): nothing sent can reach it any more.
    private var peerGone = false
    private var readPaused = false
    /// Held by the server (the denial budget): not read, no call served, until released.
    public private(set) var isHeld = false
    private var outBuffer: [UInt8] = []
    private var outStart = 0
    private var pending: [VarlinkCall] = []
    private var pendingHead = 0
    /// The call being served; nil when idle.
    private var current: VarlinkCall?
    /// Serial of the call being served.
    public private(set) var currentSerial: UInt64?
    private var nextSerial: UInt64 = 1
    /// The peer will send nothing more; close once its calls are answered and written.
    private var peerFinishedSending = false
    private var serving = false
    fileprivate var isRunnable = false
    fileprivate var isDirty = false
    public private(set) var isClosed = false
    /// An in-memory connection (no socket) hands its replies here instead of writing them.
    fileprivate var inMemoryReplies: ((VarlinkReply) -> Void)?
    /// Anything the service wants to remember about this connection (e.g. the app it checked in as).
    public var userInfo: [String: String] = [:]
    /// Since when part of a message waits for the rest (monotonic µs); nil: none does.
    fileprivate private(set) var incompleteSinceUSec: Int64?
    fileprivate var readingPaused: Bool { readPaused || isHeld }

    /// Held (or released) by the server.
    fileprivate func setHeld(_ on: Bool) {
        guard isHeld != on, !isClosed else { return }
        isHeld = on
        if !on { restartIncompleteClock(Monotonic.nowUSec()) }
        updateInterest()
        // Calls decoded (or bytes read) while held wait: serve them now.
        if !on, pendingHead < pending.count || framer.bufferedCount > 0 { server.markRunnable(self) }
    }

    /// Reading resumed: the rest of the message could not arrive while it was paused.
    fileprivate func restartIncompleteClock(_ now: Int64) {
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
        return inSet
    }

    private func updateInterest() {
        guard !isClosed else { return }
        var want: UInt32 = 0
        if !readPaused && !isHeld && !peerFinishedSending { want |= BGTASKD_EPOLLIN }
        if outBuffer.count > outStart { want |= BGTASKD_EPOLLOUT }
        // With an empty mask only the hang-up can be reported: wanted after an EOF (a stream still open
        // on a connection whose peer is gone must be noticed), not while paused or once seen.
        let stay = want != 0 || (!readPaused && !isHeld && !peerGone)
        guard stay else {
            if inSet { _ = server.epollControl(BGTASKD_EPOLL_CTL_DEL, fd: fd, events: 0, token: id) }
            inSet = false
            registered = 0
            return
        }
        if inSet && want == registered { return }
        let op = inSet ? BGTASKD_EPOLL_CTL_MOD : BGTASKD_EPOLL_CTL_ADD
        if server.epollControl(op, fd: fd, events: want, token: id) == 0 {
            inSet = true
            registered = want
        } else {
            close()
        }
    }

    fileprivate func handleEvents(_ mask: UInt32) {
        if mask & BGTASKD_EPOLLOUT != 0 { flush() }
        guard !isClosed else { return }
        let readable = BGTASKD_EPOLLIN | BGTASKD_EPOLLHUP | BGTASKD_EPOLLERR
        if mask & readable != 0 && !readPaused && !isHeld && !peerFinishedSending { readAvailable() }
        guard !isClosed else { return }
        if mask & (BGTASKD_EPOLLHUP | BGTASKD_EPOLLERR) != 0 {
            peerGone = true
            finishIfPeerGone()
        }
    }

    /// issue 11: once the peer has closed (not only shut down its sending side) and everything it sent
    /// was read, a call that streams (`more`: CheckIn, Monitor) can never end, and nothing written can
    /// reach anyone: the connection closes instead of being kept for ever (one socket per app lifecycle
    /// was kept before). A call still being answered closes it when its reply fails to be written.
    private func finishIfPeerGone() {
        guard peerGone, !isClosed else { return }
        guard peerFinishedSending else {
            updateInterest()
            return
        }
        if let call = current, call.more {
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
                if readPaused || isHeld { return }
                if n < buffer.count { return }
            } else if n == 0 {
                // EOF: the peer sent all it will send (it may have half-closed and still read).
                // Calls already received are answered; a partial message is dropped. A peer that is
                // gone altogether (POLLHUP: it closed, not just shut down its writing side) reads no
                // reply: a call with `more` (a stream, a manager hold) ends now, not at the next write.
                var probe = pollfd(fd: fd, events: 0, revents: 0)
                if current?.more == true, poll(&probe, 1, 0) == 1, probe.revents & Int16(POLLHUP) != 0 {
                    close()
                    return
                }
                peerFinishedSending = true
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
    private func drainFramer() -> Bool {
        while pending.count - pendingHead < server.limits.maxPendingCalls {
            guard let inbound = framer.next() else { break }
            switch inbound {
            case .call(let call):
                pending.append(call)
            case .reject(let error):
                enqueueFailure(error)
            case .close:
                // Oversized, invalid JSON or not an object: nothing after it can be trusted.
                if framer.closedForSize { server.noteOversized() }
                close()
                return false
            }
        }
        if pending.count - pendingHead >= server.limits.maxPendingCalls { pauseReading() }
        serveNext()
        return !isClosed
    }

    /// Tells the server whether part of a message waits for the rest (issue 11: a client that sends
    /// half a message and stalls is dropped after `incompleteMessageTimeoutUSec`).
    private func noteIncomplete() {
        let partial = framer.bufferedCount > 0 && !framer.hasCompleteMessage
        if partial {
            guard incompleteSinceUSec == nil else { return }
            incompleteSinceUSec = Monotonic.nowUSec()
            server.noteIncomplete(self, true)
        } else if incompleteSinceUSec != nil {
            incompleteSinceUSec = nil
            server.noteIncomplete(self, false)
        }
    }

    private func enqueueFailure(_ error: VarlinkError) {
        // An invalid call still takes its turn so that replies stay in order.
        var placeholder = VarlinkCall(method: "")
        placeholder.parameters = ["__error": .string(error.name), "__parameters": .object(error.parameters)]
        pending.append(placeholder)
    }

    /// A turn's work for this connection: decode what waits in the framer (if there is room) and serve.
    fileprivate func run() {
        guard !isClosed else { return }
        if framer.bufferedCount > 0 && pending.count - pendingHead < server.limits.maxPendingCalls {
            _ = drainFramer()
        } else {
            serveNext()
        }
    }

    private func serveNext() {
        guard !serving else { return }
        serving = true
        defer { serving = false }
        // Bounded per turn so that one deep pipeline cannot hold the queue; the rest runs next round.
        var served = 0
        while current == nil, pendingHead < pending.count, !isClosed, !isHeld {
            if served == 64 || server.ioPaused {
                server.markRunnable(self)
                break
            }
            served += 1
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
        guard !isClosed else { return }
        if readPaused, pending.count - pendingHead < server.limits.maxPendingCalls / 2,
            outBuffer.count - outStart < server.limits.pauseReadingAboveBufferedBytes
        {
            resumeReading()
        }
        if peerFinishedSending {
            // Decode what is left now that there is room in the queue.
            if framer.hasCompleteMessage, pending.count - pendingHead < server.limits.maxPendingCalls {
                server.markRunnable(self)
            }
            closeIfDrained()
        }
    }

    /// After the peer's EOF: close once nothing is left to serve or write.
    private func closeIfDrained() {
        guard peerFinishedSending, !isClosed, current == nil, pendingHead >= pending.count,
            outBuffer.count - outStart == 0, !isRunnable
        else { return }
        // Complete messages may remain (decoded next round); a partial one never completes.
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
        if let inMemoryReplies {
            if !call.oneway { inMemoryReplies(r) }
            return
        }
        if !call.oneway {
            r.append(to: &outBuffer)
            if server.inTurn {
                server.markDirty(self)
            } else {
                // A reply from a timer or another source: out at once.
                flush()
            }
        }
        if !r.continues && !serving && pendingHead < pending.count { server.markRunnable(self) }
        if !r.continues && peerFinishedSending && !serving && !server.inTurn { closeIfDrained() }
    }

    /// Answers the call being served (the server's own replies to invalid calls).
    fileprivate func fail(_ error: VarlinkError) {
        if let serial = currentSerial { send(.failure(error), serial: serial) }
    }

    fileprivate func reply(_ reply: VarlinkReply) {
        if let serial = currentSerial { send(reply, serial: serial) }
    }

    fileprivate func flush() {
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
            updateInterest()
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
        if buffered > server.limits.pauseReadingAboveBufferedBytes {
            pauseReading()
        } else {
            updateInterest()
        }
    }

    private func pauseReading() {
        guard !readPaused, !isClosed else { return }
        readPaused = true
        updateInterest()
    }

    private func resumeReading() {
        guard readPaused, !isClosed else { return }
        readPaused = false
        restartIncompleteClock(Monotonic.nowUSec())
        updateInterest()
        // Complete calls may already wait in the framer (read before the pause) while the socket has
        // nothing new to report: decode them this round, or they wait forever.
        if framer.bufferedCount > 0 { server.markRunnable(self) }
    }

    /// Bytes of replies not yet taken by the peer.
    public var bufferedReplyBytes: Int { outBuffer.count - outStart }

    /// Closes the connection at once; the service hears `connectionClosed`.
    public func close() {
        guard !isClosed else { return }
        if inSet { _ = server.epollControl(BGTASKD_EPOLL_CTL_DEL, fd: fd, events: 0, token: id) }
        inSet = false
        registered = 0
        isClosed = true
        // Out of the epoll set and with no Dispatch source on it, the descriptor can go at once.
        if fd >= 0 { _ = Glibc.close(fd) }
        pending.removeAll()
        pendingHead = 0
        current = nil
        currentSerial = nil
        server.forget(self)
    }
}

/// Closes `fd` a little after its Dispatch sources were cancelled. libdispatch's Linux epoll backend
/// keeps per-fd bookkeeping ("muxnotes") that a new source on a reused fd number can collide with while
/// the old one is still being torn down (swift-corelibs-libdispatch #833, #949; seen here once as
/// "Source finalized twice" under rapid churn). Not reusing the number at once avoids it. (The Varlink
/// server's sockets have no Dispatch source of their own and are closed directly.)
func closeDeferred(_ fd: Int32) {
    DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(250)) { _ = Glibc.close(fd) }
}

func setNonBlocking(_ fd: Int32) { FileIO.setNonBlocking(fd) }

// MARK: - In memory: the service driven without sockets (tests)

extension VarlinkServer {
    /// A connection without a socket, as if `peer` had connected: its replies go to `replies`, its calls
    /// come from ``serveInMemory(_:on:)``, and ``VarlinkConnection/close()`` ends it as a hang-up would.
    func inMemoryConnection(peer: PeerCredentials, replies: @escaping (VarlinkReply) -> Void) -> VarlinkConnection {
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
    func serveInMemory(_ call: VarlinkCall, on connection: VarlinkConnection) {
        dispatch(VarlinkRequest(call: call, connection: connection, serial: connection.beginInMemory(call)))
    }
}

extension VarlinkConnection {
    /// The call an in-memory connection serves now; its serial.
    fileprivate func beginInMemory(_ call: VarlinkCall) -> UInt64 {
        let serial = nextSerial
        nextSerial += 1
        current = call
        currentSerial = serial
        return serial
    }
}
