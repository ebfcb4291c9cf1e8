import CSystemd

#if canImport(Glibc)
import Glibc
#endif

/// Unix-socket calls shared by bgtaskd (the client) and bgtaskd-launcher (the server): descriptor
/// passing with SCM_RIGHTS, peer credentials, connect and bind.
public enum UnixSocketIO: Sendable {
    /// Sends `bytes` with `fd` attached (SCM_RIGHTS travels with the first byte), then the rest.
    /// Returns 0, or the errno of the failure.
    public static func send(_ socket: Int32, _ bytes: [UInt8], passing fd: Int32?) -> Int32 {
        var offset = 0
        var attached = fd
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                bgtaskd_send_with_fd(socket, raw.baseAddress! + offset, raw.count - offset, attached ?? -1)
            }
            if n == -Int(EAGAIN) {
                var p = pollfd(fd: socket, events: Int16(POLLOUT), revents: 0)
                if poll(&p, 1, 2000) <= 0 { return EAGAIN }
                continue
            }
            if n < 0 { return Int32(-n) }
            offset += n
            attached = nil
        }
        return 0
    }

    /// One non-blocking recvmsg: the bytes (empty at EOF) and the descriptors that came with them.
    /// `error` is the errno (EAGAIN: nothing to read yet), 0 on success.
    public static func receive(_ socket: Int32, maxBytes: Int = 65536) -> (bytes: [UInt8], fds: [Int32], error: Int32) {
        var buffer = [UInt8](repeating: 0, count: maxBytes)
        var fds = [Int32](repeating: -1, count: 8)
        var count: Int32 = 0
        let n = buffer.withUnsafeMutableBytes { raw in
            fds.withUnsafeMutableBufferPointer { fdp in
                bgtaskd_recv_with_fds(socket, raw.baseAddress, raw.count, fdp.baseAddress, Int32(fdp.count), &count)
            }
        }
        if n < 0 { return ([], [], Int32(-n)) }
        return (Array(buffer[0..<n]), Array(fds[0..<Int(count)]), 0)
    }

    /// (pid, uid, gid) of the process on the other end (SO_PEERCRED), nil when unknown.
    public static func peer(of socket: Int32) -> (pid: Int32, uid: UInt32, gid: UInt32)? {
        var cred = bgtaskd_ucred()
        var len = socklen_t(MemoryLayout<bgtaskd_ucred>.size)
        guard getsockopt(socket, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 else { return nil }
        return (cred.pid, cred.uid, cred.gid)
    }

    /// `sockaddr_un` for `path`, nil when it does not fit.
    static func withAddress<R>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R? {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity else { return nil }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        return withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    /// A non-blocking, close-on-exec stream socket connected to `path`; the errno on failure.
    public static func connect(path: String) -> Result<Int32, LaunchFailure> {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return .failure(LaunchFailure(.launcherUnavailable, "socket: \(String(cString: strerror(errno)))")) }
        let r = withAddress(path) { Glibc.connect(fd, $0, $1) }
        guard let r else {
            close(fd)
            return .failure(LaunchFailure(.launcherUnavailable, "\(path): socket path too long"))
        }
        if r != 0 {
            let e = errno
            close(fd)
            return .failure(LaunchFailure(.launcherUnavailable, "cannot connect to the launcher at \(path): \(String(cString: strerror(e)))"))
        }
        return .success(fd)
    }

    /// A listening, close-on-exec stream socket bound to `path` (a stale socket file is replaced).
    public static func listen(path: String, backlog: Int32 = 16) -> Result<Int32, LaunchFailure> {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(LaunchFailure(.launcherUnavailable, "socket: \(String(cString: strerror(errno)))")) }
        unlink(path)
        let r = withAddress(path) { bind(fd, $0, $1) }
        guard let r, r == 0, Glibc.listen(fd, backlog) == 0 else {
            let e = errno
            close(fd)
            return .failure(LaunchFailure(.launcherUnavailable, "cannot listen on \(path): \(String(cString: strerror(e)))"))
        }
        return .success(fd)
    }
}
