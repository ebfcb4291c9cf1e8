import BGTaskProtocol
import CSystemd

#if canImport(Glibc)
import Glibc
#endif

// Serving a connection's calls one at a time, in order, and writing their replies.
extension VarlinkConnection {
    /// A turn's work for this connection: decode what waits in the framer (if there is room) and serve.
    func run() {
        guard !isClosed else { return }
        if framer.bufferedCount > 0 && pendingCount < server.limits.maxPendingCalls {
            _ = drainFramer()
        } else {
            serveNext()
        }
    }

    func serveNext() {
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
            let inbound = pending[pendingHead]
            pendingHead += 1
            if pendingHead == pending.count {
                // All taken: the calls served are let go now (not kept until 64 more come), and a deep
                // pipeline's room with them (170 idle connections of a 10,000-app run kept ~0.6 MiB).
                pending.removeAll(keepingCapacity: pending.capacity <= 16)
                pendingHead = 0
            } else if pendingHead > 64, pendingHead * 2 > pending.count {
                pending.removeFirst(pendingHead)
                pendingHead = 0
            }
            let serial = nextSerial
            nextSerial += 1
            switch inbound {
            case .rejected(let error):
                // Refused by the decoder: its error, in its turn.
                emit(.failure(error), oneway: false)
            case .call(let call):
                current = Serving(call: call, serial: serial)
                server.dispatch(VarlinkRequest(call: call, connection: self, serial: serial))
                if call.oneway, current?.serial == serial {
                    // Oneway: nothing is sent back; the next call may run.
                    current = nil
                }
            }
        }
        guard !isClosed else { return }
        if readPauses.contains(.backpressure), pendingCount < server.limits.maxPendingCalls / 2,
            outBuffer.count - outStart < server.limits.pauseReadingAboveBufferedBytes
        {
            resumeReading()
        }
        if phase == .draining {
            // Decode what is left now that there is room in the queue.
            if framer.hasCompleteMessage, pendingCount < server.limits.maxPendingCalls {
                server.markRunnable(self)
            }
            closeIfDrained()
        }
    }

    /// After the peer's EOF: close once nothing is left to serve or write.
    func closeIfDrained() {
        guard phase == .draining, current == nil, pendingHead >= pending.count, outBuffer.count - outStart == 0,
            !isRunnable
        else { return }
        // Complete messages may remain (decoded next round); a partial one never completes.
        if framer.hasCompleteMessage { return }
        close()
    }

    // MARK: replying

    /// Runs `body`, whose replies are the parts of one document sent at once: for the unread-replies
    /// limit they are one reply (the client is reading them), not older replies left behind a newer one.
    func sendingParts(_ body: () -> Void) {
        let outer = partsBegun
        partsBegun = false
        defer { partsBegun = outer }
        body()
    }

    /// Sends a reply to the call `serial`. A final reply (continues == false) lets the next call run.
    func send(_ reply: VarlinkReply, serial: UInt64) {
        guard !isClosed, let current, current.serial == serial else { return }
        var r = reply
        if !current.call.more || r.error != nil { r.continues = false }
        if !r.continues { self.current = nil }
        emit(r, oneway: current.call.oneway)
        if !r.continues && !serving && pendingHead < pending.count { server.markRunnable(self) }
        if !r.continues && phase == .draining && !serving && !server.inTurn { closeIfDrained() }
    }

    /// Writes a reply: within a turn (the socket thread's, or the queue's own work in `VarlinkServer.asTurn`)
    /// at the turn's end, or sooner for a connection whose calls read in this turn are all answered; outside
    /// a turn, at once.
    private func emit(_ reply: VarlinkReply, oneway: Bool) {
        if let inMemoryReplies {
            if !oneway { inMemoryReplies(reply) }
            return
        }
        guard !oneway else { return }
        if partsBegun != true { newestReplyStart = outBuffer.count }
        if partsBegun == false { partsBegun = true }
        reply.append(to: &outBuffer)
        if server.inTurn {
            server.markDirty(self)
        } else {
            flush()
        }
    }

    func flush() {
        guard !isClosed else { return }
        while outStart < outBuffer.count {
            let n = outBuffer.withUnsafeBytes { buf -> Int in
                guard let base = buf.baseAddress else { return 0 }
                return write(fd, base + outStart, buf.count - outStart)
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
            newestReplyStart = 0
            updateInterest()
            if phase == .draining {
                closeIfDrained()
                if isClosed { return }
            }
            if readPauses.contains(.backpressure) && pendingCount < server.limits.maxPendingCalls { resumeReading() }
            return
        }
        if outStart > 65536 && outStart * 2 > outBuffer.count {
            outBuffer.removeFirst(outStart)
            newestReplyStart = max(0, newestReplyStart - outStart)
            outStart = 0
        }
        if newestReplyStart - outStart > server.limits.maxBufferedBytes {
            // The client does not read what it asked for: replies before the newest are still unread.
            close()
            return
        }
        if buffered > server.limits.pauseReadingAboveBufferedBytes {
            pauseReading()
        } else {
            updateInterest()
        }
    }

    /// Writes the replies buffered for the end of the turn now (the daemon's resume path: an app's events
    /// before its thaw); what the socket does not take waits as before.
    public func writeBufferedReplies() {
        guard !isClosed, outBuffer.count > outStart, inMemoryReplies == nil else { return }
        flush()
    }

    /// Bytes of replies not yet taken by the peer.
    public var bufferedReplyBytes: Int { outBuffer.count - outStart }

    /// Closes the connection at once; the service hears `connectionClosed`.
    public func close() {
        guard !isClosed else { return }
        if registered != nil { _ = server.epollControl(BGTASKD_EPOLL_CTL_DEL, fd: fd, events: 0, token: id) }
        registered = nil
        phase = .closed
        // Out of the epoll set and with no Dispatch source on it, the descriptor can go at once.
        if fd >= 0 { _ = Glibc.close(fd) }
        pending.removeAll()
        pendingHead = 0
        current = nil
        server.forget(self)
    }
}
