import BGTaskProtocol
import Dispatch
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
