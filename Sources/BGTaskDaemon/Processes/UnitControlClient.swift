import BGTaskLaunch

#if canImport(Glibc)
import Glibc
import BGTaskProtocol
#endif

/// Sends `io.bgtaskd.Launcher.ControlAppUnit` calls, oneway, to bgtaskd-launcher on a connection of its
/// own (the spawn connection keeps its strict request/reply order). Never waits: the socket is
/// non-blocking, a full or closed one is an error the caller logs, and the outcome shows in the unit's
/// `cgroup.events`, which the daemon watches anyway.
final class UnitControlClient {
    let path: String
    private var fd: Int32 = -1

    init(path: String) { self.path = path }

    deinit { if fd >= 0 { close(fd) } }

    /// 0 when the call was handed to the launcher, else an errno.
    func send(_ cgroup: String, _ action: AppUnitControl.Action) -> Int32 {
        let bytes = AppUnitControl.call(cgroup: cgroup, action: action).encoded()
        for attempt in 0..<2 {
            if fd < 0 {
                switch UnixSocketIO.connect(path: path) {
                case .success(let s): fd = s
                case .failure: return ECONNREFUSED
                }
            }
            let e = UnixSocketIO.send(fd, bytes, passing: nil)
            if e == 0 { return 0 }
            close(fd)
            fd = -1
            // The launcher restarted: once more on a new connection.
            if attempt == 0 && (e == EPIPE || e == ECONNRESET || e == ENOTCONN) { continue }
            return e
        }
        return EIO
    }
}
