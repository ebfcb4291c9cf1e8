import BGTaskProtocol
import Dispatch
import Foundation
import Testing
@testable import BGTaskVarlink

/// Work of the queue's own (the daemon's deadline timer) run with `VarlinkServer.asTurn` is one turn: what
/// it sends on a stream leaves once, at its end, in one write, with `beforeTurn` / `afterTurn` around it.
/// Outside a turn the same events leave one by one, as they are sent. Real sockets: the server's listener,
/// a client with a streaming call (`more`) open.
@Suite struct QueueTurnTests {
    final class StreamService: VarlinkService {
        var interfaceDescriptions: [(name: String, description: String)] {
            [("org.example.stream", "interface org.example.stream\n\nmethod Watch() -> (word: string)\n")]
        }
        /// The open streaming call (set on the queue).
        var watch: VarlinkRequest?
        let watching = DispatchSemaphore(value: 0)
        func handle(_ request: VarlinkRequest) {
            watch = request
            request.reply(["word": .string("watching")], continues: true)
            watching.signal()
        }
        func connectionClosed(_ connection: VarlinkConnection) {}
    }

    /// Bytes waiting on `fd` (none: 0), without reading them.
    static func waiting(_ fd: Int32) -> Int {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_PEEK | MSG_DONTWAIT)) }
        return max(0, n)
    }

    /// Reads what `fd` holds now, in one read.
    static func readOnce(_ fd: Int32) -> [String] {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        guard n > 0 else { return [] }
        return buffer[0..<n].split(separator: 0).compactMap {
            (try? JSON.parse(Array($0)))?["parameters"]?["word"]?.stringValue
        }
    }

    @Test func aQueueTurnSendsItsEventsAtItsEndInOneWrite() throws {
        let service = StreamService()
        try withTestServer(service, label: "queue-turn") { queue, server, path in
            let fd = try connectTestClient(path)
            defer { close(fd) }
            let call = Array(#"{"method":"org.example.stream.Watch","more":true}"#.utf8) + [0]
            try #require(call.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == call.count)
            try #require(service.watching.wait(timeout: .now() + 10) == .success)
            var first = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            try #require(poll(&first, 1, 10_000) == 1)
            #expect(Self.readOnce(fd) == ["watching"])

            // Outside a turn: each event is on the socket as soon as it is sent.
            let oneByOne: [Int] = queue.sync {
                (1...3).map { i in
                    service.watch?.reply(["word": .string("alone \(i)")], continues: true)
                    return Self.waiting(fd)
                }
            }
            #expect(oneByOne[0] > 0 && oneByOne[0] < oneByOne[1] && oneByOne[1] < oneByOne[2], "\(oneByOne)")
            #expect(Self.readOnce(fd) == ["alone 1", "alone 2", "alone 3"])

            // In a queue turn: nothing until it ends, then all of it at once; the turn's hooks around it.
            var hooks: [String] = []
            var during: [Int] = []
            queue.sync {
                server.beforeTurn = { hooks.append("before") }
                server.afterTurn = { hooks.append("after \(Self.waiting(fd))") }
                server.asTurn {
                    for i in 1...3 {
                        service.watch?.reply(["word": .string("turn \(i)")], continues: true)
                        during.append(Self.waiting(fd))
                    }
                    // A turn within the turn is part of it.
                    server.asTurn { service.watch?.reply(["word": .string("inner")], continues: true) }
                    during.append(Self.waiting(fd))
                }
                server.beforeTurn = nil
                server.afterTurn = nil
            }
            #expect(during == [0, 0, 0, 0], "written before the turn's end: \(during)")
            #expect(hooks.count == 2 && hooks[0] == "before" && hooks[1] != "after 0", "\(hooks)")
            #expect(Self.readOnce(fd) == ["turn 1", "turn 2", "turn 3", "inner"])
        }
    }
}
