import BGTaskProtocol
import Dispatch
import Synchronization
import Testing

@testable import BGTaskClientCore

#if canImport(Glibc)
import Glibc
#endif

/// The directories `FakeVarlinkServer.temporaryDirectory()` made in this process.
private let madeDirectories = Mutex<[String]>([])

/// Removes every directory `temporaryDirectory()` made, and the sockets left in them (at exit).
private func removeMadeDirectories() {
    for directory in madeDirectories.withLock({ $0 }) {
        if let dir = opendir(directory) {
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name != "." && name != ".." { unlink(directory + "/" + name) }
            }
            closedir(dir)
        }
        rmdir(directory)
    }
}

/// One client connection of the fake server, as the test's handler sees it.
final class FakePeer: Sendable {
    let fd: Int32
    let number: Int
    /// `shut`: hung up on; `released`: the descriptor is closed (and its number may be another socket's).
    private let state = Mutex((shut: false, released: false))

    init(fd: Int32, number: Int) {
        self.fd = fd
        self.number = number
    }

    /// Writes raw bytes (any chunking the test wants).
    func write(_ bytes: [UInt8]) {
        state.withLock { st in
            guard !st.shut, !st.released else { return }
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress.map { $0 + offset }, $0.count - offset, Int32(MSG_NOSIGNAL)) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return }
                offset += n
            }
        }
    }

    func reply(_ parameters: [String: JSON] = [:], continues: Bool = false) {
        write(VarlinkReply(parameters: parameters, continues: continues).encoded())
    }

    func fail(_ name: String, _ parameters: [String: JSON] = [:]) {
        write(VarlinkReply(parameters: parameters, error: name).encoded())
    }

    /// Hangs up, as a daemon that goes away does.
    func close() {
        state.withLock { st in
            guard !st.shut, !st.released else { return }
            st.shut = true
            _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
        }
    }

    /// Closes the descriptor once the reader is done with it.
    func release() {
        state.withLock { st in
            guard !st.released else { return }
            st.released = true
            Glibc.close(fd)
        }
    }
}

/// A Varlink peer on a temporary Unix socket: a thread accepts, a thread per connection reads calls and
/// hands each to `handler`, which answers through the `FakePeer`. Every call is recorded.
final class FakeVarlinkServer: Sendable {
    typealias Handler = @Sendable (VarlinkCall, FakePeer) -> Void

    let path: String
    private let listenFD: Int32
    private let handler: Handler
    private struct State {
        var calls: [(connection: Int, call: VarlinkCall)] = []
        var peers: [FakePeer] = []
        var stopped = false
    }
    private let state = Mutex(State())

    struct SetupError: Error { var message: String }

    /// A temporary directory for sockets, removed with what it holds when the test process exits (not at
    /// deinit: a server's accept thread keeps it alive until it is stopped, and a test may start a server on
    /// the same path again after `stop()`).
    static func temporaryDirectory() throws -> String {
        var template = Array("/tmp/bgtaskclient-test-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer -> UnsafeMutablePointer<CChar>? in
            guard let base = buffer.baseAddress else { return nil }
            return mkdtemp(base)
        }
        guard let made else {
            throw SetupError(message: "mkdtemp failed")
        }
        let path = String(cString: made)
        madeDirectories.withLock { made in
            if made.isEmpty { atexit { removeMadeDirectories() } }
            made.append(path)
        }
        return path
    }

    init(path: String, handler: @escaping Handler) throws {
        self.path = path
        self.handler = handler
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SetupError(message: "socket failed") }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let len = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        guard bound == 0, listen(fd, 16) == 0 else {
            Glibc.close(fd)
            throw SetupError(message: "bind/listen failed: \(String(cString: strerror(errno)))")
        }
        listenFD = fd
        spawnThread { self.acceptLoop() }
    }

    var calls: [VarlinkCall] { state.withLock { $0.calls.map(\.call) } }
    var callsWithConnection: [(connection: Int, call: VarlinkCall)] { state.withLock { $0.calls } }
    var connectionCount: Int { state.withLock { $0.peers.count } }

    /// Stops listening, hangs up on every client and removes the socket file.
    func stop() {
        let peers = state.withLock { st -> [FakePeer]? in
            guard !st.stopped else { return nil }
            st.stopped = true
            // Under the lock: the accept loop closes the descriptor only after this.
            _ = Glibc.shutdown(listenFD, Int32(SHUT_RDWR))
            return st.peers
        }
        guard let peers else { return }
        unlink(path)
        for peer in peers { peer.close() }
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listenFD, nil, nil)
            if fd < 0 {
                if errno == EINTR { continue }
                if !state.withLock({ $0.stopped }) {
                    // A failed accept (a client that gave up): wait for the next one, or for stop()'s
                    // shutdown, which wakes poll as a hang-up.
                    var p = pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)
                    _ = poll(&p, 1, -1)
                    continue
                }
                Glibc.close(listenFD)
                return
            }
            let peer = state.withLock { st -> FakePeer? in
                guard !st.stopped else { return nil }
                let peer = FakePeer(fd: fd, number: st.peers.count + 1)
                st.peers.append(peer)
                return peer
            }
            guard let peer else {
                Glibc.close(fd)
                continue
            }
            spawnThread { self.serve(peer) }
        }
    }

    private func serve(_ peer: FakePeer) {
        var framer = VarlinkFramer()
        var buffer = [UInt8](repeating: 0, count: 4096)
        defer { peer.release() }
        while true {
            let n = buffer.withUnsafeMutableBytes { read(peer.fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return }
            framer.append(buffer[0..<n])
            while let message = try? framer.next() {
                guard let call = try? VarlinkCall.decode(message) else { return }
                state.withLock { $0.calls.append((peer.number, call)) }
                TestChanges.announce()
                handler(call, peer)
            }
        }
    }
}

/// Every change a test may wait for is announced here: a call the fake server records, an item a
/// `Recorder` takes, a line or event the recording delegate gets. `eventually` re-checks its condition
/// on each announcement instead of polling.
enum TestChanges {
    private struct State {
        var generation: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter: UInt64 = 0
    }
    private static let state = Mutex(State())

    static func announce() {
        let waiters = state.withLock { st in
            st.generation &+= 1
            defer { st.waiters.removeAll() }
            return Array(st.waiters.values)
        }
        for w in waiters { w.resume() }
    }

    static var generation: UInt64 { state.withLock { $0.generation } }

    /// Returns once something was announced after `seen`, or at `deadline`.
    static func wait(after seen: UInt64, until deadline: DispatchTime) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let id = state.withLock { st -> UInt64? in
                guard st.generation == seen else { return nil }
                st.nextWaiter &+= 1
                st.waiters[st.nextWaiter] = c
                return st.nextWaiter
            }
            guard let id else { return c.resume() }
            // The time limit: a timer resumes the waiter if no announcement did.
            DispatchQueue.global().asyncAfter(deadline: deadline) {
                state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
            }
        }
    }
}

/// Waits until `condition` holds (checked again on every `TestChanges` announcement) or `seconds` pass.
/// The fake peer runs on real threads and sockets, so tests wait for what they caused; nothing asserts
/// a duration.
func eventually(
    _ seconds: Double = 5, isolation: isolated (any Actor)? = #isolation, _ condition: () -> Bool
) async -> Bool {
    let deadline = DispatchTime.now() + .milliseconds(Int(seconds * 1000))
    while DispatchTime.now() < deadline {
        let seen = TestChanges.generation
        if condition() { return true }
        await TestChanges.wait(after: seen, until: deadline)
    }
    return condition()
}

/// A thread-safe list the handlers and sinks append to.
final class Recorder<Element: Sendable>: Sendable {
    private let items = Mutex<[Element]>([])
    func append(_ item: Element) {
        items.withLock { $0.append(item) }
        TestChanges.announce()
    }
    var all: [Element] { items.withLock { $0 } }
    var count: Int { items.withLock { $0.count } }
}
