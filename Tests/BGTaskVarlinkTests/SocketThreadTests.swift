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

    /// The thread enters the queue with one work item, replaced every `runsPerItem` wake-ups (libdispatch
    /// counts an item's runs in 32 bits): with a new item every 2 wake-ups, every wake-up still runs its
    /// turn on the queue, with its events, and the turn's `false` still ends the thread.
    @Test func theThreadKeepsTurningAcrossNewWorkItems() throws {
        let thread = try #require(SocketThread(runsPerItem: 2))
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        try #require(bgtaskd_epoll_ctl(thread.epfd, BGTASKD_EPOLL_CTL_ADD, fds[0], BGTASKD_EPOLLIN, 7) == 0)
        let queue = DispatchQueue(label: "bgtaskd.test.turns")
        final class Seen: @unchecked Sendable {
            var turns = 0
            var onQueue = true
            let done = DispatchSemaphore(value: 0)
        }
        let seen = Seen()
        let reader = fds[0]
        let wanted = 7
        let started = thread.start(queue: queue, turn: { [thread] count in
            dispatchPrecondition(condition: .onQueue(queue))
            var byte: UInt8 = 0
            for i in 0..<count where thread.tokens[i] == 7 { _ = read(reader, &byte, 1) }
            seen.turns += 1
            if seen.turns == wanted { seen.done.signal() }
            return seen.turns < wanted
        })
        try #require(started)
        let exit = try Self.exitDescriptor(ofThread: thread.tid)
        let deadline = Date() + 10
        for _ in 0..<wanted {
            var byte: UInt8 = 1
            #expect(write(fds[1], &byte, 1) == 1)
            // The next byte only once this one's turn has read it: one wake-up each (at most 10 s in all).
            var p = pollfd(fd: fds[0], events: Int16(POLLIN), revents: 0)
            while poll(&p, 1, 0) == 1, Date() < deadline { sched_yield() }
        }
        #expect(seen.done.wait(timeout: .now() + 10) == .success, "all \(wanted) turns ran")
        #expect(queue.sync { seen.turns } == wanted)
        #expect(Self.ends(exit), "the turn's false ended the thread")
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
