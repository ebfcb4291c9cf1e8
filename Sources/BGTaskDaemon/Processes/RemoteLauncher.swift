import BGTaskLaunch
import BGTaskProtocol

#if canImport(Glibc)
import Glibc
#endif

/// The daemon's side of privilege separation (`LauncherSocket=`): asks bgtaskd-launcher to start an app
/// and gets back its pid and a pidfd. One connection, kept open and re-made when the launcher
/// restarted. A call waits for its reply on the daemon's queue, bounded by `timeoutMS` (a spawn is a
/// fork and an exec: as short as the in-process one it replaces).
final class RemoteLauncher {
    let path: String
    static let timeoutMS: Int64 = 2000
    private var fd: Int32 = -1

    init(path: String) {
        self.path = path
    }

    deinit {
        if fd >= 0 { close(fd) }
    }

    /// Sends `request`; on success the pid and its pidfd (nil if the launcher could not open one).
    func spawn(_ request: SpawnRequest) -> Result<(pid: Int32, pidfd: Int32?), LaunchFailure> {
        let deadline = Monotonic.nowUSec() + Self.timeoutMS * 1000
        let message = request.call.encoded()
        // A connection the launcher closed (it restarted) shows as readable or hung up: the launcher never
        // speaks first. Sending on it would fail too; either way nothing was started, so a new
        // connection and one more try are safe.
        var sent = false
        for attempt in 0..<2 {
            if fd >= 0, attempt > 0 || isStale(fd) { disconnect() }
            if fd < 0 {
                switch UnixSocketIO.connect(path: path) {
                case .success(let s): fd = s
                case .failure(let failure): return .failure(failure)
                }
            }
            let e = UnixSocketIO.send(fd, message, passing: nil)
            if e == 0 {
                sent = true
                break
            }
            if e != EPIPE && e != ECONNRESET && e != ENOTCONN {
                disconnect()
                return .failure(LaunchFailure(.launcherUnavailable, "cannot send to the launcher at \(path): \(String(cString: strerror(e)))"))
            }
        }
        guard sent else {
            disconnect()
            return .failure(LaunchFailure(.launcherUnavailable, "the launcher at \(path) closes every connection"))
        }
        return receiveReply(deadline: deadline)
    }

    private func receiveReply(deadline: Int64) -> Result<(pid: Int32, pidfd: Int32?), LaunchFailure> {
        var framer = VarlinkFramer(maxMessageSize: LauncherInterface.maxMessageSize)
        var fds: [Int32] = []
        func fail(_ failure: LaunchFailure) -> Result<(pid: Int32, pidfd: Int32?), LaunchFailure> {
            for f in fds { close(f) }
            // A reply still to come would answer the wrong request later: start over.
            disconnect()
            return .failure(failure)
        }
        while true {
            let message: ArraySlice<UInt8>?
            do { message = try framer.next() } catch { return fail(LaunchFailure(.spawnFailed, "launcher reply too large")) }
            if let message {
                let reply: VarlinkReply
                do { reply = try VarlinkReply.decode(message) } catch {
                    return fail(LaunchFailure(.spawnFailed, "invalid launcher reply: \(error)"))
                }
                switch SpawnReply.decode(reply) {
                case .failure(let failure):
                    for f in fds { close(f) }
                    if failure.kind == .permissionDenied { disconnect() }
                    return .failure(failure)
                case .success(let pid):
                    let pidfd = fds.first
                    for f in fds.dropFirst() { close(f) }
                    return .success((pid, pidfd))
                }
            }
            let left = deadline - Monotonic.nowUSec()
            if left <= 0 {
                return fail(LaunchFailure(.launcherUnavailable, "no reply from the launcher at \(path) within \(Self.timeoutMS) ms"))
            }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let r = poll(&p, 1, Int32(max(1, (left + 999) / 1000)))
            if r < 0 && errno == EINTR { continue }
            if r <= 0 { continue }
            let got = UnixSocketIO.receive(fd)
            fds += got.fds
            if got.error == EAGAIN { continue }
            if got.error != 0 {
                return fail(LaunchFailure(.launcherUnavailable, "launcher connection: \(String(cString: strerror(got.error)))"))
            }
            if got.bytes.isEmpty {
                return fail(LaunchFailure(.launcherUnavailable, "the launcher at \(path) closed the connection without a reply"))
            }
            framer.append(got.bytes)
        }
    }

    private func isStale(_ fd: Int32) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) != 0
    }

    private func disconnect() {
        if fd >= 0 { close(fd) }
        fd = -1
    }
}
