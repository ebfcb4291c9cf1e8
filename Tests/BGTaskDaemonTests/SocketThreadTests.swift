import Dispatch
import Foundation
import Testing
import BGTaskProtocol
@testable import BGTaskDaemon

/// issue 15: the Varlink server waits for its sockets on a thread of its own (`bgtaskd-sockets`) that
/// enters the server's queue with `queue.sync`. The thread lives exactly as long as the server serves.
@Suite(.serialized) struct SocketThreadTests {
    final class NullService: VarlinkService {
        var interfaceDescriptions: [(name: String, description: String)] { [] }
        func handle(_ request: VarlinkRequest) { request.fail(.methodNotImplemented(request.call.method)) }
        func connectionClosed(_ connection: VarlinkConnection) {}
    }

    /// This process's threads named `bgtaskd-sockets`.
    static func socketThreads() -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter {
            (try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) == "bgtaskd-sockets"
        }.count
    }

    /// Waits (bounded: 10,000 looks, 1 ms apart) until `count` socket threads exist. A poll of /proc:
    /// a thread's start (it names itself) and its exit have no event this test could wait on.
    static func waitForSocketThreads(_ count: Int) -> Bool {
        for _ in 0..<10_000 {
            if socketThreads() == count { return true }
            usleep(1000)
        }
        return false
    }

    @Test func theSocketThreadStartsWithItsServerAndEndsAtShutdown() {
        let before = Self.socketThreads()
        let queue = DispatchQueue(label: "bgtaskd.test.sockets")
        let service = NullService()
        nonisolated(unsafe) var server: VarlinkServer? = queue.sync { VarlinkServer(queue: queue, service: service) }
        #expect(Self.waitForSocketThreads(before + 1), "the server's socket thread runs")
        queue.sync {
            server?.shutdown()
            server = nil
        }
        #expect(Self.waitForSocketThreads(before), "the socket thread ended with the server")
    }

    @Test func aServerDroppedWithoutShutdownEndsItsThreadToo() {
        let before = Self.socketThreads()
        let queue = DispatchQueue(label: "bgtaskd.test.sockets")
        let service = NullService()
        nonisolated(unsafe) var server: VarlinkServer? = queue.sync { VarlinkServer(queue: queue, service: service) }
        #expect(Self.waitForSocketThreads(before + 1), "the server's socket thread runs")
        queue.sync {
            #expect(server?.connectionCount == 0)
            server = nil
        }
        #expect(Self.waitForSocketThreads(before), "the socket thread ended with the server")
    }
}
