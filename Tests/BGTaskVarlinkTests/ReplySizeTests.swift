import BGTaskProtocol
import Dispatch
import Foundation
import Testing
@testable import BGTaskVarlink

/// A client that does not read its replies is disconnected once the replies it has not taken, the newest
/// aside, pass `maxBufferedBytes`; one reply larger than that (a `Record` under load) is what the client
/// asked for, and it gets it whole. Real sockets, the limit made small.
@Suite struct ReplySizeTests {
    final class BigService: VarlinkService {
        var interfaceDescriptions: [(name: String, description: String)] {
            [("org.example.big", "interface org.example.big\n\nmethod Big(size: int) -> (text: string)\n"
                + "method Parts(size: int, parts: int) -> (text: string)\n")]
        }
        func handle(_ request: VarlinkRequest) {
            let size = Int(request.call.parameters["size"]?.intValue ?? 0)
            guard request.call.method.hasSuffix(".Parts") else {
                return request.reply(["text": .string(String(repeating: "x", count: size))])
            }
            // One document in `parts` replies sent at once (as the daemon sends a recording).
            let parts = Int(request.call.parameters["parts"]?.intValue ?? 1)
            request.replyInParts {
                for i in 0..<parts {
                    request.reply(["text": .string(String(repeating: "x", count: size))], continues: i < parts - 1)
                }
            }
        }
        func connectionClosed(_ connection: VarlinkConnection) {}
    }

    static var smallLimit: VarlinkLimits {
        var limits = VarlinkLimits()
        limits.maxBufferedBytes = 64 * 1024
        return limits
    }

    /// Sends `calls` Big calls of `size` in one write, waits until `until` holds for the server's connections
    /// (looked at on its queue), then reads until EOF or `want` replies.
    static func replies(
        calls: Int, size: Int, parts: Int? = nil, want: Int, until: @escaping ([VarlinkConnection]) -> Bool
    ) throws -> (replies: [Int], eof: Bool) {
        try withTestServer(BigService(), label: "big", limits: smallLimit) { queue, server, path in
            let fd = try connectTestClient(path)
            defer { close(fd) }
            var bytes: [UInt8] = []
            for _ in 0..<calls {
                if let parts {
                    bytes += Array(#"{"method":"org.example.big.Parts","parameters":{"size":\#(size),"parts":\#(parts)},"more":true}"#.utf8) + [0]
                } else {
                    bytes += Array(#"{"method":"org.example.big.Big","parameters":{"size":\#(size)}}"#.utf8) + [0]
                }
            }
            try #require(bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == bytes.count)
            let deadline = Date().addingTimeInterval(10)
            while !queue.sync(execute: { until(Array(server.connections.values)) }) {
                try #require(Date() < deadline, "the server did not get there")
                usleep(1_000)
            }
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            var eof = false
            while received.filter({ $0 == 0 }).count < want {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n <= 0 {
                    eof = true
                    break
                }
                received += buffer[0..<n]
            }
            // Whole messages only (a closed connection may leave one cut short).
            var whole = received.split(separator: 0, omittingEmptySubsequences: false).dropLast()
            whole.removeAll { $0.isEmpty }
            let sizes = try whole.compactMap {
                try JSON.parse(Array($0))["parameters"]?["text"]?.stringValue?.utf8.count
            }
            return (sizes, eof)
        }
    }

    @Test func oneReplyLargerThanTheLimitIsWrittenWhole() throws {
        // 2 MB against a 64 KiB limit: the socket takes a few hundred KB, the rest waits for the client.
        let (sizes, eof) = try Self.replies(calls: 1, size: 2_000_000, want: 1) { connections in
            // Past the limit, unread: where the connection used to be closed (or already closed).
            connections.isEmpty || connections.contains { $0.bufferedReplyBytes > Self.smallLimit.maxBufferedBytes }
        }
        #expect(!eof, "the connection was closed before its one reply was read")
        #expect(sizes == [2_000_000])
    }

    @Test func oneDocumentInPartsLargerThanTheLimitIsWrittenWhole() throws {
        // Ten parts of 200 KB sent at once against a 64 KiB limit: the client reads them all.
        let (sizes, eof) = try Self.replies(calls: 1, size: 200_000, parts: 10, want: 10) { connections in
            connections.isEmpty || connections.contains { $0.bufferedReplyBytes > 5 * 200_000 }
        }
        #expect(!eof, "the connection was closed before the document's parts were read")
        #expect(sizes == Array(repeating: 200_000, count: 10))
    }

    @Test func repliesLeftUnreadBehindANewerOneCloseTheConnection() throws {
        // Three replies of 400 KB asked for at once and not read: the second finds the first's rest unread.
        let (sizes, eof) = try Self.replies(calls: 3, size: 400_000, want: 3) { connections in
            connections.isEmpty || connections.contains { $0.bufferedReplyBytes > 2 * 400_000 }
        }
        #expect(eof, "a client that does not read its replies is disconnected")
        #expect(sizes.count < 3, "got \(sizes.count) replies")
    }
}
