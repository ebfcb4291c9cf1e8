import CSystemd

#if canImport(Glibc)
import Glibc
#endif

/// Why the daemon could not get its listening socket.
public struct SocketError: Error, CustomStringConvertible, Sendable {
    public let description: String
}

/// The daemon's listening socket: the one systemd passed (socket activation, fd named `varlink`),
/// else one it binds itself.
public enum ListeningSocket: Sendable {
    /// A passed fd named `varlink` (or the only passed fd), nil when none was passed.
    public static func fromSystemd() -> Int32? {
        var names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = nil
        let n = sd_listen_fds_with_names(1, &names)
        defer {
            if let names {
                for i in 0..<Int(max(n, 0)) { free(names[i]) }
                free(names)
            }
        }
        guard n > 0 else { return nil }
        var chosen: Int32? = nil
        for i in 0..<n {
            let fd = SD_LISTEN_FDS_START + i
            let name = names.flatMap { $0[Int(i)] }.map { String(cString: $0) } ?? ""
            guard sd_is_socket_unix(fd, Int32(SOCK_STREAM.rawValue), 1, nil, 0) > 0 else { continue }
            if name == "varlink" { chosen = fd; break }
            if n == 1 { chosen = fd }
        }
        if let chosen { _ = fcntl(chosen, F_SETFD, FD_CLOEXEC) }
        return chosen
    }

    /// Binds and listens on `path` (mode 0666: read-only methods are open to every local user; the
    /// daemon checks permissions per call from SO_PEERCRED). A stale socket file left by a crash is
    /// replaced; a live one (another daemon answering) is an error.
    public static func bind(path: String) throws(SocketError) -> Int32 {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let maxLen = MemoryLayout.size(ofValue: addr.sun_path) - 1
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count <= maxLen else {
            throw SocketError(description: "\(path): socket path longer than \(maxLen) bytes")
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let len = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
        ensureParentDirectory(path)

        if access(path, F_OK) == 0 {
            let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            let alive = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(probe, $0, len) == 0 }
            }
            close(probe)
            if alive { throw SocketError(description: "\(path): another daemon is listening there") }
            unlink(path)
        }

        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SocketError(description: "socket: \(String(cString: strerror(errno)))") }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, len) }
        }
        guard bound == 0 else {
            let e = errno
            close(fd)
            throw SocketError(description: "\(path): bind: \(String(cString: strerror(e)))")
        }
        chmod(path, 0o666)
        // issue 15: clients that connect between READY=1 and the end of start-up (the apps being
        // registered) wait in the backlog; as deep as the kernel allows (net.core.somaxconn caps it).
        guard listen(fd, SOMAXCONN) == 0 else {
            let e = errno
            close(fd)
            throw SocketError(description: "\(path): listen: \(String(cString: strerror(e)))")
        }
        return fd
    }

    static func ensureParentDirectory(_ path: String) {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return }
        makeDirectories(String(path[..<slash]), mode: 0o755)
    }
}

/// `mkdir -p`: creates `path` and its missing parents with `mode` (the socket's and the state directory).
public func makeDirectories(_ path: String, mode: UInt32) {
    var current = path.hasPrefix("/") ? "" : "."
    for part in path.split(separator: "/") {
        current += "/" + part
        if mkdir(current, mode_t(mode)) != 0 && errno != EEXIST { return }
    }
}
