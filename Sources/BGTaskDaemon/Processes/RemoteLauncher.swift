import BGTaskLaunch
import BGTaskProtocol
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// The daemon's side of privilege separation (`LauncherSocket=`): asks bgtaskd-launcher to start an app
/// and gets back its pid and a pidfd. One connection, kept open and re-made when the launcher restarted.
///
/// Asynchronous, like every other wait of the daemon: a request is sent and the state queue goes on;
/// the reply is read by a Dispatch source and handed to the request's completion, on the queue. Replies
/// come in the order of the requests (the launcher serves a connection one message at a time). A
/// request unanswered after `timeoutMS` fails, and so does every one behind it: the connection is
/// dropped, so that a late reply can never be taken for another request's (the launcher ends an app
/// whose reply it could not deliver).
final class RemoteLauncher: @unchecked Sendable {
    // @unchecked: used only on `queue`.
    typealias Completion = @Sendable (Result<(pid: Int32, pidfd: Int32?), LaunchFailure>) -> Void

    let path: String
    let queue: DispatchQueue
    static let timeoutMS: Int64 = 2000
    private var fd: Int32 = -1
    private var source: (any DispatchSourceRead)?
    private var framer = VarlinkFramer(maxMessageSize: LauncherInterface.maxMessageSize)
    /// Descriptors received and not yet matched with a successful reply (SCM_RIGHTS come with the
    /// first byte of their reply, so they arrive in reply order).
    private var receivedFDs: [Int32] = []
    private var pending: [(completion: Completion, deadlineUSec: Int64)] = []
    private var timer: (any DispatchSourceTimer)?

    init(path: String, queue: DispatchQueue) {
        self.path = path
        self.queue = queue
    }

    deinit {
        timer?.cancel()
        disconnect()
    }

    /// Sends `request`; `completion` runs later on `queue` (never before this returns) with the pid and
    /// its pidfd (nil if the launcher could not open one), or the failure.
    func spawn(_ request: SpawnRequest, completion: @escaping Completion) {
        dispatchPrecondition(condition: .onQueue(queue))
        let message = request.call.encoded()
        // A connection the launcher closed (it restarted) shows as readable or hung up while nothing is
        // pending (the launcher never speaks first): a new one, and nothing was lost.
        if fd >= 0, pending.isEmpty, isStale(fd) { disconnect() }
        var error: Int32 = 0
        for attempt in 0..<2 {
            if fd < 0 {
                switch UnixSocketIO.connect(path: path) {
                case .success(let s): attach(s)
                case .failure(let failure): return later(completion, .failure(failure))
                }
            }
            error = UnixSocketIO.send(fd, message, passing: nil)
            if error == 0 { break }
            // The launcher went away under us. If requests were in flight on that connection they
            // fail; this one is tried once more on a new connection.
            failAll(LaunchFailure(.launcherUnavailable, "the launcher at \(path) closed the connection"))
            disconnect()
            if attempt == 0 && (error == EPIPE || error == ECONNRESET || error == ENOTCONN) { continue }
            break
        }
        guard error == 0 else {
            return later(completion, .failure(LaunchFailure(
                .launcherUnavailable, "cannot send to the launcher at \(path): \(String(cString: strerror(error)))")))
        }
        pending.append((completion, Monotonic.nowUSec() + Self.timeoutMS * 1000))
        armTimer()
    }

    private func later(_ completion: @escaping Completion, _ result: Result<(pid: Int32, pidfd: Int32?), LaunchFailure>) {
        queue.async { completion(result) }
    }

    private func attach(_ socket: Int32) {
        fd = socket
        let s = DispatchSource.makeReadSource(fileDescriptor: socket, queue: queue)
        s.setEventHandler { [weak self] in self?.readable() }
        // Closed only once the source is gone (and a little later: libdispatch's per-fd bookkeeping).
        s.setCancelHandler { closeDeferred(socket) }
        s.resume()
        source = s
    }

    private func readable() {
        guard fd >= 0 else { return }
        let got = UnixSocketIO.receive(fd)
        receivedFDs += got.fds
        if got.error == EAGAIN || got.error == EINTR { return }
        if got.error != 0 || got.bytes.isEmpty {
            let why = got.error != 0 ? String(cString: strerror(got.error)) : "closed the connection"
            failAll(LaunchFailure(.launcherUnavailable, "the launcher at \(path): \(why)"))
            disconnect()
            return
        }
        framer.append(got.bytes)
        while true {
            let message: ArraySlice<UInt8>?
            do { message = try framer.next() } catch {
                return broken(LaunchFailure(.spawnFailed, "launcher reply too large"))
            }
            guard let message else { return }
            let reply: VarlinkReply
            do { reply = try VarlinkReply.decode(message) } catch {
                return broken(LaunchFailure(.spawnFailed, "invalid launcher reply: \(error)"))
            }
            guard !pending.isEmpty else { return broken(LaunchFailure(.spawnFailed, "a launcher reply nobody asked for")) }
            let request = pending.removeFirst()
            switch SpawnReply.decode(reply) {
            case .success(let pid):
                let pidfd = receivedFDs.isEmpty ? nil : receivedFDs.removeFirst()
                request.completion(.success((pid, pidfd)))
            case .failure(let failure):
                request.completion(.failure(failure))
                if failure.kind == .permissionDenied {
                    // The launcher closes such a connection.
                    failAll(failure)
                    disconnect()
                    return
                }
            }
            armTimer()
        }
    }

    /// The connection cannot be trusted any more: everything in flight fails, and it is dropped.
    private func broken(_ failure: LaunchFailure) {
        failAll(failure)
        disconnect()
    }

    private func failAll(_ failure: LaunchFailure) {
        let failed = pending
        pending.removeAll()
        timer?.cancel()
        timer = nil
        for request in failed { request.completion(.failure(failure)) }
    }

    /// One timer, for the oldest request's deadline.
    private func armTimer() {
        timer?.cancel()
        timer = nil
        guard let oldest = pending.first else { return }
        let t = DispatchSource.makeTimerSource(queue: queue)
        let leftUSec = max(0, oldest.deadlineUSec - Monotonic.nowUSec())
        t.schedule(deadline: .now() + .microseconds(Int(leftUSec)), leeway: .milliseconds(10))
        t.setEventHandler { [weak self] in
            guard let self, let oldest = self.pending.first else { return }
            if Monotonic.nowUSec() < oldest.deadlineUSec { return self.armTimer() }
            self.broken(LaunchFailure(
                .launcherUnavailable, "no reply from the launcher at \(self.path) within \(Self.timeoutMS) ms"))
        }
        t.resume()
        timer = t
    }

    private func isStale(_ fd: Int32) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) != 0
    }

    private func disconnect() {
        // Shut down now, so that the launcher sees it at once and cannot deliver a late reply (it ends
        // an app whose reply it could not send); the descriptor itself is closed after its source.
        if fd >= 0 { shutdown(fd, Int32(SHUT_RDWR)) }
        source?.cancel()  // closes fd
        source = nil
        fd = -1
        framer = VarlinkFramer(maxMessageSize: LauncherInterface.maxMessageSize)
        for f in receivedFDs { close(f) }
        receivedFDs.removeAll()
    }
}
