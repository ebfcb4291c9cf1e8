import BGTaskProtocol
import Dispatch
import Foundation
import Testing
@testable import BGTaskVarlink

/// A connection serves its messages one at a time, in the order they came: a message the decoder refuses
/// (no `method`) is answered with its error in its own turn, between the calls around it, and a oneway
/// call takes its turn without a reply. Real sockets: the server's listener, a client socket, pipelined bytes.
@Suite struct ConnectionOrderTests {
    final class EchoService: VarlinkService {
        var interfaceDescriptions: [(name: String, description: String)] {
            [("org.example.echo", "interface org.example.echo\n\nmethod Echo(word: string) -> (word: string)\n")]
        }
        /// The connection the last call came on (set on the queue).
        var lastConnection: VarlinkConnection?
        func handle(_ request: VarlinkRequest) {
            lastConnection = request.connection
            request.reply(["word": request.call.parameters["word"] ?? .null])
        }
        func connectionClosed(_ connection: VarlinkConnection) {}
    }

    /// Sends `messages` in one write and reads `count` replies (NUL-terminated JSON objects).
    static func exchange(
        _ messages: [String], replies count: Int, afterwards: ((EchoService) -> Void)? = nil
    ) throws -> [JSON] {
        let service = EchoService()
        return try withTestServer(service, label: "order") { queue, _, path in
            let fd = try connectTestClient(path)
            defer { close(fd) }
            var bytes: [UInt8] = []
            for m in messages { bytes += Array(m.utf8) + [0] }
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            try #require(written == bytes.count)

            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while received.filter({ $0 == 0 }).count < count {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                try #require(n > 0, "the server answered \(received.filter { $0 == 0 }.count) of \(count) messages")
                received += buffer[0..<n]
            }
            if let afterwards { queue.sync { afterwards(service) } }
            return try received.split(separator: 0, omittingEmptySubsequences: true).map { try JSON.parse(Array($0)) }
        }
    }

    @Test func aRefusedMessageIsAnsweredInItsTurnBetweenTheCallsAroundIt() throws {
        let replies = try Self.exchange(
            [
                #"{"method":"org.example.echo.Echo","parameters":{"word":"one"}}"#,
                #"{"parameters":{"word":"no method"}}"#,
                #"{"method":"org.example.echo.Echo","parameters":{"word":"two"}}"#,
            ], replies: 3)
        #expect(replies.count == 3)
        #expect(replies[0]["parameters"]?["word"]?.stringValue == "one")
        #expect(replies[1]["error"]?.stringValue == "org.varlink.service.InvalidParameter")
        #expect(replies[1]["parameters"]?["parameter"]?.stringValue == "method")
        #expect(replies[2]["parameters"]?["word"]?.stringValue == "two")
    }

    @Test func aOnewayCallTakesItsTurnWithoutAReply() throws {
        let replies = try Self.exchange(
            [
                #"{"method":"org.example.echo.Echo","parameters":{"word":"one"}}"#,
                #"{"method":"org.example.echo.Echo","parameters":{"word":"quiet"},"oneway":true}"#,
                #"{"method":"org.example.echo.Echo","parameters":{"word":"two"}}"#,
            ], replies: 2)
        #expect(replies.map { $0["parameters"]?["word"]?.stringValue } == ["one", "two"])
    }

    /// Once every call pipelined on a connection is taken, the connection keeps none of them (they were
    /// kept until 64 more came) nor a deep pipeline's room.
    @Test func aConnectionKeepsNoCallItHasServed() throws {
        let words = (0..<300).map { "w\($0)" }
        var pending = -1, capacity = -1
        let replies = try Self.exchange(
            words.map { #"{"method":"org.example.echo.Echo","parameters":{"word":"\#($0)"}}"# }, replies: words.count,
            afterwards: { service in
                pending = service.lastConnection?.pending.count ?? -1
                capacity = service.lastConnection?.pending.capacity ?? -1
            })
        #expect(replies.map { $0["parameters"]?["word"]?.stringValue } == words)
        #expect(pending == 0 && capacity <= 16, "\(pending) calls kept, room for \(capacity)")
    }
}

/// A connection whose every call is answered gets its replies at once, not at the end of the turn:
/// reading a client's request wakes that client (the kernel wakes a reader on the send space freed), and
/// a reply written later in the turn would find it asleep again and wake it a second time. Two clients
/// whose calls are served in one turn: the second call's handler already finds the first's reply on its
/// client's socket. Real sockets; the turn made one by pausing the server while both calls are sent.
@Suite struct TurnReplyTests {
    final class PeekService: VarlinkService {
        var interfaceDescriptions: [(name: String, description: String)] {
            [("org.example.echo", "interface org.example.echo\n\nmethod Echo(word: string) -> (word: string)\n")]
        }
        /// The test's client sockets by word, and what each call's handler saw: the turn it ran in and
        /// whether the other client's reply was already readable.
        var clients: [String: Int32] = [:]
        var turns = 0
        var seen: [(word: String, turn: Int, otherReplied: Bool)] = []
        /// Signalled once both calls have looked: the test reads no reply before, or a reply it has
        /// already read would look like one never written.
        let bothSeen = DispatchSemaphore(value: 0)
        func handle(_ request: VarlinkRequest) {
            let word = request.call.parameters["word"]?.stringValue ?? ""
            if let other = clients.first(where: { $0.key != word })?.value {
                var byte: UInt8 = 0
                let n = recv(other, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
                seen.append((word, turns, n > 0))
                if seen.count == 2 { bothSeen.signal() }
            }
            request.reply(["word": .string(word)])
        }
        func connectionClosed(_ connection: VarlinkConnection) {}
    }

    static func send(_ fd: Int32, _ word: String) throws {
        let bytes = Array(#"{"method":"org.example.echo.Echo","parameters":{"word":"\#(word)"}}"#.utf8) + [0]
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        try #require(written == bytes.count)
    }

    /// Two clients of the server at `path`, each accepted and served once (one at a time: no other client's
    /// reply to peek at then).
    static func twoServedClients(_ path: String) throws -> (Int32, Int32) {
        let a = try connectTestClient(path), b = try connectTestClient(path)
        try send(a, "warm-a")
        let warmA = try reply(a)
        try send(b, "warm-b")
        let warmB = try reply(b)
        try #require(warmA == "warm-a" && warmB == "warm-b")
        return (a, b)
    }

    static func reply(_ fd: Int32) throws -> String? {
        var received: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let n = read(fd, &byte, 1)
            try #require(n == 1, "no reply")
            if byte == 0 { break }
            received.append(byte)
        }
        return try JSON.parse(received)["parameters"]?["word"]?.stringValue
    }

    @Test func aRepliedConnectionIsWrittenBeforeTheNextOneIsServed() throws {
        let service = PeekService()
        try withTestServer(service, label: "turn-replies") { queue, server, path in
            queue.sync { server.beforeTurn = { service.turns += 1 } }
            let (a, b) = try Self.twoServedClients(path)
            defer {
                close(a)
                close(b)
            }
            queue.sync {
                service.clients = ["a": a, "b": b]
                service.seen = []
                server.pauseIO()
            }
            try Self.send(a, "a")
            try Self.send(b, "b")
            queue.sync { server.resumeIO() }
            try #require(service.bothSeen.wait(timeout: .now() + 10) == .success, "the two calls were not served")
            #expect(try Self.reply(a) == "a")
            #expect(try Self.reply(b) == "b")
            let seen = queue.sync { service.seen }
            try #require(seen.count == 2)
            #expect(seen[0].turn == seen[1].turn, "the two calls were served in different turns: \(seen)")
            #expect(!seen[0].otherReplied, "the first call served found a reply before any was written: \(seen)")
            #expect(seen[1].otherReplied, "the second call served in the turn found no reply to the first yet: \(seen)")
        }
    }
}

/// The other side of the early write: a connection still owed an answer (a pipelined call not served yet,
/// or one its service answers later, as Launch is answered after its spawn) is not written early, even
/// when an earlier call of it is already answered: a pipelining client sends on per batch of replies.
/// Client a pipelines "now" (answered at once) and "later" (kept, answered after the turn); client b's
/// call, served in the same turn, finds nothing on a's socket yet. Both of a's replies arrive, in order.
@Suite struct OwedConnectionTests {
    final class KeepService: VarlinkService {
        var interfaceDescriptions: [(name: String, description: String)] {
            [("org.example.echo", "interface org.example.echo\n\nmethod Echo(word: string) -> (word: string)\n")]
        }
        var peekAt: Int32 = -1
        var kept: VarlinkRequest?
        var seen: [(word: String, otherReadable: Bool)] = []
        func handle(_ request: VarlinkRequest) {
            let word = request.call.parameters["word"]?.stringValue ?? ""
            switch word {
            case "later":
                kept = request
            case "b":
                var byte: UInt8 = 0
                let n = recv(peekAt, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
                seen.append((word, n > 0))
                request.reply(["word": .string(word)])
            default:
                request.reply(["word": .string(word)])
            }
        }
        func connectionClosed(_ connection: VarlinkConnection) {}
    }

    @Test func aConnectionOwedAnAnswerIsWrittenAtTheEndOfTheTurn() throws {
        let service = KeepService()
        try withTestServer(service, label: "owed") { queue, server, path in
            let (a, b) = try TurnReplyTests.twoServedClients(path)
            defer {
                close(a)
                close(b)
            }
            queue.sync {
                service.peekAt = a
                server.pauseIO()
            }
            try TurnReplyTests.send(a, "now")
            try TurnReplyTests.send(a, "later")
            try TurnReplyTests.send(b, "b")
            queue.sync { server.resumeIO() }
            #expect(try TurnReplyTests.reply(b) == "b")
            // "later" is answered now, after the turn (as a spawn's result comes later).
            queue.sync {
                service.kept?.reply(["word": .string("later")])
                service.kept = nil
            }
            #expect(try TurnReplyTests.reply(a) == "now")
            #expect(try TurnReplyTests.reply(a) == "later")
            let seen = queue.sync { service.seen }
            try #require(seen.count == 1)
            #expect(!seen[0].otherReadable, "a's first reply was written while a was still owed an answer")
        }
    }
}

/// Runs `body` with a server of `service` listening on a fresh socket path (its queue, the server, the
/// path), then shuts the server down and removes the path.
func withTestServer<T>(
    _ service: some VarlinkService, label: String, limits: VarlinkLimits = VarlinkLimits(),
    _ body: (DispatchQueue, VarlinkServer, String) throws -> T
) throws -> T {
    let queue = DispatchQueue(label: "bgtaskd.test.\(label)")
    let dir = FileManager.default.temporaryDirectory
        .appendingPathComponent("varlink-\(label)-\(getpid())-\(UUID().uuidString.prefix(8))").path
    let path = dir + "/socket"
    let server = queue.sync { VarlinkServer(queue: queue, service: service, limits: limits) }
    defer {
        queue.sync { server.shutdown() }
        unlink(path)
        rmdir(dir)
    }
    let listener = try ListeningSocket.bind(path: path)
    queue.sync { server.listen(fd: listener) }
    return try body(queue, server, path)
}

/// A client socket connected to `path`, reads timing out after 10 s.
func connectTestClient(_ path: String) throws -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    try #require(fd >= 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        for (i, b) in path.utf8.enumerated() { raw[i] = b }
    }
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    if connected != 0 { close(fd) }
    try #require(connected == 0, "connect: \(String(cString: strerror(errno)))")
    var timeout = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    return fd
}
