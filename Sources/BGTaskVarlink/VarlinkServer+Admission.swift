import BGTaskProtocol
import Dispatch
import CSystemd

#if canImport(Glibc)
import Glibc
#endif

extension VarlinkServer {
    func acceptPending(_ listenFD: Int32) {
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

    /// One uid holds at most `maxConnectionsPerUser` connections, and all but root together
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

    func resumeAccepting() {
        guard acceptPaused else { return }
        acceptPaused = false
        for (token, fd) in listeners { _ = epollControl(BGTASKD_EPOLL_CTL_MOD, fd: fd, events: BGTASKD_EPOLLIN, token: token) }
    }

    func forget(_ connection: VarlinkConnection) {
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
    func noteOversized() {
        oversizedConnections += 1
    }

    // MARK: messages left half-sent

    /// `c` holds part of a message (or no longer does).
    func noteIncomplete(_ c: VarlinkConnection, _ partial: Bool) {
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
        let now = monotonicNowUSec()
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

}
