import BGTaskProtocol
public import Dispatch
import CSystemd

#if canImport(Glibc)
import Glibc
#endif

/// A Varlink server on Unix stream sockets, driven by one thread of its own on one serial queue.
///
/// Every socket — listeners and connections — sits in one epoll set of the server's own; the server's
/// socket thread (`SocketThread`) blocks in `epoll_wait` on it and enters the queue with
/// `queue.sync` when any of them is ready, and one turn serves every ready socket. So a burst from many
/// clients costs one wake-up rather than one per socket, no Dispatch source is made or torn down per
/// connection, and a connection's descriptor is closed as soon as it leaves the set. The queue remains
/// the only owner of the state; the thread only waits.
///
/// Sockets are non-blocking; writes are buffered per connection and written as soon as every call the
/// connection sent is answered, else (an answer still owed, what others' calls sent it) at the end of the
/// turn; pipelined replies leave in one write. Calls on one connection are served one at a time in order;
/// a connection whose peer does not read its replies is paused, then dropped, and never holds up another.
///
/// Stored `var`s are unchecked for exclusivity in release builds, as VarlinkConnection's (which says why).
public final class VarlinkServer: @unchecked Sendable {
    // @unchecked: every mutable field is touched only on `queue`.
    public let queue: DispatchQueue
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Changed on `queue` only (a reload); the connection bounds apply to connections accepted later.
    public var limits: VarlinkLimits
    public let vendor: String
    public let product: String
    public let version: String
    public let url: String
    weak var service: (any VarlinkService)?

    let epfd: Int32
    /// Waits on `epfd` and runs `turn(count:)` on `queue` (SocketThread.swift).
    let socketThread: SocketThread
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var listeners: [UInt64: Int32] = [:]
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Other descriptors read on the socket thread (+Readables.swift), by token.
    var readables: [UInt64: () -> Void] = [:]
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Told when `pauseIO()` (true) and `resumeIO()` (false) take effect: watched descriptors
    /// (`watchReadable`) are not read by the socket thread meanwhile.
    public var pauseChanged: ((Bool) -> Void)?
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var connections: [UInt64: VarlinkConnection] = [:]
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var nextToken: UInt64 = 1
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var descriptions: [String: String] = [:]
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var methodsByInterface: [String: Set<String>] = [:]
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Every declared method, fully qualified.
    var knownMethods: Set<String> = []
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// The descriptions parsed: every call is checked against its method's declaration.
    var registry = VarlinkInterfaceRegistry()
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var interfaceOrder: [String] = []

    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// True while a turn runs: replies are collected and written at its end.
    internal private(set) var inTurn = false
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var runnable: [VarlinkConnection] = []
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var dirty: [VarlinkConnection] = []
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var turnScheduled = false

    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Run at the start and at the end of every turn, once the turn's replies were written (the daemon
    /// holds its journal writer's wake-ups in between, so that a reply never waits behind the log line
    /// it caused).
    public var beforeTurn: (() -> Void)?
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    public var afterTurn: (() -> Void)?

    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Paused by `pauseIO()`: sockets are not read and no further call is served (replies already
    /// made are still written).
    public internal(set) var ioPaused = false

    /// Stops reading every client and serving their calls until `resumeIO()` (the journal is
    /// congested). Call on `queue`.
    public func pauseIO() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !ioPaused else { return }
        ioPaused = true
        socketThread.pause()
        pauseChanged?(true)
    }

    /// Reads and serves again. Call on `queue`.
    public func resumeIO() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard ioPaused else { return }
        ioPaused = false
        pauseChanged?(false)
        socketThread.resume()
        let now = monotonicNowUSec()
        for c in incomplete.values { c.restartIncompleteClock(now) }
        if !runnable.isEmpty { scheduleTurn() }
    }

    /// The socket thread's id once it runs (0 before; tests).
    var socketThreadID: Int32 { socketThread.tid }

    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Calls received since start.
    public internal(set) var callCount = 0

    // Bounds on connections, and no busy loop when out of descriptors.
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Open connections per uid.
    var connectionsByUID: [UInt32: Int] = [:]
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Open connections of uids other than root.
    var unprivilegedConnections = 0
    /// Connections allowed at once (from RLIMIT_NOFILE at start, less `reservedDescriptors`).
    public let maxConnections: Int
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Connections refused since start (a uid at its bound, every connection slot taken).
    public internal(set) var refusedConnections = 0
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Connections dropped since start for a message left half-sent (`incompleteMessageTimeoutUSec`).
    public internal(set) var timedOutConnections = 0
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Connections closed since start for a message over `maxMessageSize`.
    public internal(set) var oversizedConnections = 0
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Connections held (`hold(_:)`): not read and none of their calls served until `releaseHeld()`.
    var held: [UInt64: VarlinkConnection] = [:]
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Uids whose new connections are held from the start until `releaseHeld()`.
    var heldUIDs: Set<UInt32> = []
    /// Processes whose new connections are held until the denial budget's interval ends.
    struct HeldProcess: Hashable { var uid: UInt32; var pid: Int32 }
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var heldProcesses: Set<HeldProcess> = []
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// True while accept(2) failed for want of descriptors: the listeners are out of the epoll set
    /// (they would be reported ready in every turn, a busy loop) until a connection closes or 100 ms pass.
    public internal(set) var acceptPaused = false
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Retries accepting while paused. Made and armed once at start: out of descriptors, libdispatch
    /// could not make the timer descriptor a first timer on its clock needs.
    var acceptRetryTimer: (any DispatchSourceTimer)?
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Connections holding part of a message, and since when (monotonic µs).
    var incomplete: [UInt64: VarlinkConnection] = [:]
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var incompleteTimer: (any DispatchSourceTimer)?
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var incompleteTimerArmed = false
    /// One read buffer for every connection (all reads happen on `queue`): no allocation per event.
    let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 16)
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

    func register(name: String, description: String) {
        if descriptions[name] == nil { interfaceOrder.append(name) }
        descriptions[name] = description
        let methods = Interfaces.methodNames(in: description)
        methodsByInterface[name] = methods
        for m in methods { knownMethods.insert(name + "." + m) }
        // bgtaskd's own interfaces come with their generated signature table; another (a test's) is parsed.
        if let signature = Interfaces.signatures[name], Interfaces.descriptions[name] == description {
            registry.register(signature)
            return
        }
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
        setNonBlockingDescriptor(fd)
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

    func takeToken() -> UInt64 {
        defer { nextToken += 1 }
        return nextToken
    }

    func epollControl(_ op: Int32, fd: Int32, events: UInt32, token: UInt64) -> Int32 {
        bgtaskd_epoll_ctl(epfd, op, fd, events, token)
    }

    // MARK: turns

    /// One wake-up of the socket thread, with the `count` events its `epoll_wait` returned: serve
    /// every ready socket, then write what they were answered. Paused (`pauseIO()`), nothing is read:
    /// the sockets stay ready and are reported again after `resumeIO()`.
    func turn(count n: Int) {
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
                    // Every call it sent answered: its replies leave now, while its client is still awake
                    // (the read of its request woke it: the kernel wakes a reader on freed send space), where
                    // at the end of the turn they would find it asleep again and wake it a second time. A
                    // connection still owed an answer (one given later, more pipelined calls) writes at the
                    // end of the turn, all at once: a pipelining client sends on per batch of replies.
                    if c.isDirty, c.isAnswered { c.flush() }
                } else if let fd = listeners[token] {
                    ready.append(fd)
                } else if let handler = readables[token] {
                    handler()
                }
                // Else: closed earlier in this turn.
            }
            // New connections after the hang-ups of this turn: a slot freed by a client that has gone
            // is free for the one that connected after it.
            for fd in ready { acceptPending(fd) }
        }
        finishTurn()
    }

    /// Runs `body`, work of the queue's own (a timer's), as a turn: what it sends is written at its end,
    /// each connection's replies and events in one write, and `beforeTurn` / `afterTurn` run around it
    /// (the daemon holds its journal writer's wake-ups until then). Within a turn, `body` just runs.
    public func asTurn(_ body: () -> Void) {
        guard !inTurn else { return body() }
        beforeTurn?()
        inTurn = true
        body()
        finishTurn()
    }

    /// Serves connections with calls waiting, writes every buffered reply, runs `afterTurn`.
    func finishTurn() {
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
    func writeDirty() {
        // The list is swapped out and handed back emptied: emptying a copy still shared with `dirty` would
        // allocate a new array every turn.
        while !dirty.isEmpty {
            var write: [VarlinkConnection] = []
            swap(&write, &dirty)
            for c in write {
                c.isDirty = false
                c.flush()
            }
            if dirty.isEmpty {
                write.removeAll(keepingCapacity: true)
                dirty = write
            }
        }
    }

    func scheduleTurn() {
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
    func markRunnable(_ c: VarlinkConnection) {
        if !c.isRunnable {
            c.isRunnable = true
            runnable.append(c)
        }
        if !inTurn { scheduleTurn() }
    }

    /// `c` has replies to write at the end of this turn.
    func markDirty(_ c: VarlinkConnection) {
        guard !c.isDirty else { return }
        c.isDirty = true
        dirty.append(c)
    }

}
