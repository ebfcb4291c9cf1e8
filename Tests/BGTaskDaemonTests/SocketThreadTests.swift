import Dispatch
import Foundation
import Testing
import BGTaskProtocol
@testable import BGTaskDaemon

/// issue 15: the Varlink server waits for its sockets on a thread of its own (`bgtaskd-sockets`) that
/// enters the server's queue with `queue.sync`. The thread lives exactly as long as the server serves.
/// (Other suites make servers of their own meanwhile: each test follows its server's thread by id.)
@Suite(.serialized) struct SocketThreadTests {
    final class NullService: VarlinkService {
        var interfaceDescriptions: [(name: String, description: String)] { [] }
        func handle(_ request: VarlinkRequest) { request.fail(.methodNotImplemented(request.call.method)) }
        func connectionClosed(_ connection: VarlinkConnection) {}
    }

    static func name(ofThread tid: Int32) -> String? {
        (try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Polls `condition` (bounded: 10,000 looks, 1 ms apart). A poll of /proc: a thread's start (it
    /// names itself) and its exit have no event this test could wait on.
    static func eventually(_ condition: () -> Bool) -> Bool {
        for _ in 0..<10_000 {
            if condition() { return true }
            usleep(1000)
        }
        return false
    }

    /// The server's socket thread id once it runs and has named itself; nil if it never does.
    static func runningSocketThread(of server: VarlinkServer?, on queue: DispatchQueue) -> Int32? {
        var tid: Int32 = 0
        let ok = eventually {
            tid = queue.sync { server?.socketThreadID ?? 0 }
            return tid != 0 && name(ofThread: tid) == "bgtaskd-sockets"
        }
        return ok ? tid : nil
    }

    @Test func theSocketThreadStartsWithItsServerAndEndsAtShutdown() throws {
        let queue = DispatchQueue(label: "bgtaskd.test.sockets")
        let service = NullService()
        nonisolated(unsafe) var server: VarlinkServer? = queue.sync { VarlinkServer(queue: queue, service: service) }
        let tid = try #require(Self.runningSocketThread(of: server, on: queue), "the server's socket thread runs")
        queue.sync {
            server?.shutdown()
            server = nil
        }
        #expect(Self.eventually { Self.name(ofThread: tid) == nil }, "the socket thread ended at shutdown")
    }

    @Test func aServerDroppedWithoutShutdownEndsItsThreadToo() throws {
        let queue = DispatchQueue(label: "bgtaskd.test.sockets")
        let service = NullService()
        nonisolated(unsafe) var server: VarlinkServer? = queue.sync { VarlinkServer(queue: queue, service: service) }
        let tid = try #require(Self.runningSocketThread(of: server, on: queue), "the server's socket thread runs")
        queue.sync {
            #expect(server?.connectionCount == 0)
            server = nil
        }
        #expect(Self.eventually { Self.name(ofThread: tid) == nil }, "the socket thread ended with its server")
    }
}
