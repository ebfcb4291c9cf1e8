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
        let queue = DispatchQueue(label: "bgtaskd.test.order")
        let service = EchoService()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("varlink-order-\(getpid())-\(UUID().uuidString.prefix(8))").path
        let path = dir + "/socket"
        let server = queue.sync { VarlinkServer(queue: queue, service: service) }
        defer {
            queue.sync { server.shutdown() }
            unlink(path)
            rmdir(dir)
        }
        let listener = try ListeningSocket.bind(path: path)
        queue.sync { server.listen(fd: listener) }

        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in path.utf8.enumerated() { raw[i] = b }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(connected == 0, "connect: \(String(cString: strerror(errno)))")

        var bytes: [UInt8] = []
        for m in messages { bytes += Array(m.utf8) + [0] }
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        try #require(written == bytes.count)

        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
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
