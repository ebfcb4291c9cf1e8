import Dispatch
import Foundation
import Testing
import BGTaskProtocol
import CSystemd
@testable import BGTaskVarlink

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

    /// The server's socket thread id, named `bgtaskd-sockets` (`socketThreadID` waits for the new thread
    /// to have named itself and said its id); nil if it is not that thread.
    static func runningSocketThread(of server: VarlinkServer?, on queue: DispatchQueue) -> Int32? {
        let tid = queue.sync { server?.socketThreadID ?? 0 }
        return tid != 0 && name(ofThread: tid) == "bgtaskd-sockets" ? tid : nil
    }

    /// A descriptor that becomes readable when thread `tid` exits (pidfd of one thread).
    static func exitDescriptor(ofThread tid: Int32) throws -> Int32 {
        let fd = bgtaskd_thread_pidfd_open(tid)
        try #require(fd >= 0, "pidfd_open(\(tid), PIDFD_THREAD): \(String(cString: strerror(-fd)))")
        return fd
    }

    /// Whether the thread of `exitFD` ends within 10 s (an event: the pidfd turns readable).
    static func ends(_ exitFD: Int32) -> Bool {
        defer { close(exitFD) }
        var p = pollfd(fd: exitFD, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 10_000) == 1
    }

    @Test func theSocketThreadStartsWithItsServerAndEndsAtShutdown() throws {
        let queue = DispatchQueue(label: "bgtaskd.test.sockets")
        let service = NullService()
        nonisolated(unsafe) var server: VarlinkServer? = queue.sync { VarlinkServer(queue: queue, service: service) }
        let tid = try #require(Self.runningSocketThread(of: server, on: queue), "the server's socket thread runs")
        let exit = try Self.exitDescriptor(ofThread: tid)
        queue.sync {
            server?.shutdown()
            server = nil
        }
        #expect(Self.ends(exit), "the socket thread ended at shutdown")
    }

    @Test func aServerDroppedWithoutShutdownEndsItsThreadToo() throws {
        let queue = DispatchQueue(label: "bgtaskd.test.sockets")
        let service = NullService()
        nonisolated(unsafe) var server: VarlinkServer? = queue.sync { VarlinkServer(queue: queue, service: service) }
        let tid = try #require(Self.runningSocketThread(of: server, on: queue), "the server's socket thread runs")
        let exit = try Self.exitDescriptor(ofThread: tid)
        queue.sync {
            #expect(server?.connectionCount == 0)
            server = nil
        }
        #expect(Self.ends(exit), "the socket thread ended with its server")
    }
}
