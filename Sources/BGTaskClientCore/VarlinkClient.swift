public import BGTaskProtocol

#if canImport(Glibc)
import Glibc
#endif

/// Why a call did not get a normal reply.
public enum VarlinkClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The service answered with a named error.
    case remote(VarlinkError)
    /// Connecting failed (`errno` text).
    case connect(String)
    /// The connection broke or the peer sent something that is not Varlink.
    case io(String)

    public var description: String {
        switch self {
        case .remote(let e): return e.description
        case .connect(let s): return "cannot connect: \(s)"
        case .io(let s): return s
        }
    }

    /// The Varlink error name, if the service answered with one.
    public var errorName: String? {
        if case .remote(let e) = self { return e.name }
        return nil
    }
}

/// A blocking Varlink connection over a Unix socket: one call at a time, or one stream.
///
/// Not thread-safe: use one connection per thread (the app library keeps its event stream on a
/// connection of its own). The socket is closed when the object goes away.
public final class VarlinkClientConnection {
    public let path: String
    private let fd: Int32
    private var framer = VarlinkFramer(maxMessageSize: 16 * 1024 * 1024)
    private var closed = false

    /// Connects to the socket at `path`.
    public init(path: String) throws(VarlinkClientError) {
        self.path = path
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
            throw .connect("\(path): invalid socket path")
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .connect(String(cString: strerror(errno))) }
        let len = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, len) }
        }
        if rc != 0 {
            let e = errno
            Glibc.close(fd)
            throw .connect("\(path): \(String(cString: strerror(e)))")
        }
        self.fd = fd
    }

    deinit { close() }

    /// Closes the socket; a stream being read on another thread ends.
    public func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }

    /// Shuts the socket down without releasing the descriptor, waking a reader blocked on it.
    public func shutdown() {
        guard !closed else { return }
        _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }

    /// Bounds every later send and receive to `seconds` (SO_SNDTIMEO / SO_RCVTIMEO); 0 waits forever.
    /// A call that runs out of time throws `.io` and leaves the connection unusable: close it.
    public func setTimeout(seconds: Double) {
        guard !closed, seconds >= 0, seconds.isFinite else { return }
        let whole = seconds.rounded(.down)
        var tv = timeval(tv_sec: Int(whole), tv_usec: Int((seconds - whole) * 1_000_000))
        let size = socklen_t(MemoryLayout<timeval>.size)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, size)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, size)
    }

    /// Calls `method` and returns the reply's parameters.
    @discardableResult
    public func call(_ method: String, _ parameters: [String: JSON] = [:]) throws(VarlinkClientError) -> [String: JSON] {
        try send(VarlinkCall(method: method, parameters: parameters))
        let reply = try readReply()
        if let error = reply.error { throw .remote(VarlinkError(error, reply.parameters)) }
        return reply.parameters
    }

    /// Sends a call without waiting for any reply.
    public func callOneway(_ method: String, _ parameters: [String: JSON] = [:]) throws(VarlinkClientError) {
        try send(VarlinkCall(method: method, parameters: parameters, oneway: true))
    }

    /// Calls `method` with `more` and hands each reply to `body` until the last one, or until
    /// `body` returns false. Errors end the stream by throwing.
    public func stream(
        _ method: String, _ parameters: [String: JSON] = [:], _ body: ([String: JSON]) -> Bool
    ) throws(VarlinkClientError) {
        try send(VarlinkCall(method: method, parameters: parameters, more: true))
        while true {
            let reply = try readReply()
            if let error = reply.error { throw .remote(VarlinkError(error, reply.parameters)) }
            if !body(reply.parameters) || !reply.continues { return }
        }
    }

    /// Writes raw bytes (tests and benchmarks).
    public func send(_ call: VarlinkCall) throws(VarlinkClientError) {
        let bytes = call.encoded()
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress.map { $0 + off }, raw.count - off, Int32(MSG_NOSIGNAL))
            }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw .io("write: \(String(cString: strerror(errno)))") }
            off += n
        }
    }

    /// Reads the next reply.
    public func readReply() throws(VarlinkClientError) -> VarlinkReply {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let message: ArraySlice<UInt8>?
            do { message = try framer.next() } catch { throw .io("reply too large") }
            if let message {
                do { return try VarlinkReply.decode(message) } catch { throw .io("invalid reply: \(error)") }
            }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n == 0 { throw .io("connection closed by \(path)") }
            if n < 0 { throw .io("read: \(String(cString: strerror(errno)))") }
            framer.append(buffer[0..<n])
        }
    }
}

/// A blocking connection used from one thread at a time: not Sendable.
@available(*, unavailable)
extension VarlinkClientConnection: Sendable {}
