import BGTaskProtocol
import Testing

@testable import BGTaskClientCore

#if canImport(Glibc)
import Glibc
#endif

@Suite struct CallChannelTests {
    @Test func callIsFramedAndAnswered() throws {
        let dir = try FakeVarlinkServer.temporaryDirectory()
        let server = try FakeVarlinkServer(path: dir + "/s") { call, peer in
            peer.reply(["taskId": 5, "echo": .object(call.parameters)])
        }
        defer { server.stop() }
        let channel = CallChannel(path: server.path)
        let reply = try channel.call("io.bgtaskd.App.BeginBackgroundTask", ["appId": "org.example.Mail", "name": "sync"])
        #expect(reply["taskId"] == 5)
        #expect(reply["echo"] == ["appId": "org.example.Mail", "name": "sync"])
        let calls = server.calls
        #expect(calls.count == 1)
        #expect(calls.first?.method == "io.bgtaskd.App.BeginBackgroundTask")
        #expect(calls.first?.more == false)
        #expect(calls.first?.oneway == false)

        // One connection for the app's lifetime: assertions live as long as it.
        try channel.call("io.bgtaskd.App.EndBackgroundTask", ["appId": "org.example.Mail", "taskId": 5])
        #expect(server.connectionCount == 1)
    }

    @Test func namedErrorsAreTyped() throws {
        let dir = try FakeVarlinkServer.temporaryDirectory()
        let server = try FakeVarlinkServer(path: dir + "/s") { _, peer in
            peer.fail("io.bgtaskd.App.NotPermitted", ["identifier": "x"])
        }
        defer { server.stop() }
        let channel = CallChannel(path: server.path)
        #expect(throws: BGTaskClientError.notPermitted("x")) {
            try channel.call("io.bgtaskd.App.SubmitTaskRequest", ["identifier": "x"])
        }
        // An error reply leaves the connection usable.
        #expect(throws: BGTaskClientError.notPermitted("x")) { try channel.call("io.bgtaskd.App.SubmitTaskRequest") }
        #expect(server.connectionCount == 1)
    }

    @Test func aDeadConnectionIsReplacedBeforeTheCallIsSent() async throws {
        let dir = try FakeVarlinkServer.temporaryDirectory()
        let hungUp = Recorder<Int>()
        let server = try FakeVarlinkServer(path: dir + "/s") { _, peer in
            peer.reply(["ok": true])
            if peer.number == 1 {  // the daemon went away after answering
                peer.close()
                hungUp.append(1)
            }
        }
        defer { server.stop() }
        let channel = CallChannel(path: server.path)
        try channel.call("io.bgtaskd.App.RefreshStatus")
        let first = channel.generation
        #expect(await eventually { hungUp.count == 1 })
        let reply = try channel.call("io.bgtaskd.App.RefreshStatus")
        #expect(reply["ok"] == true)
        #expect(server.connectionCount == 2)
        #expect(channel.generation > first)
        #expect(server.calls.count == 2)
    }

    @Test func aCallWithoutAReplyIsNotRetried() throws {
        let dir = try FakeVarlinkServer.temporaryDirectory()
        let server = try FakeVarlinkServer(path: dir + "/s") { _, peer in peer.close() }
        defer { server.stop() }
        let channel = CallChannel(path: server.path)
        #expect(throws: BGTaskClientError.self) { try channel.call("io.bgtaskd.App.BeginBackgroundTask") }
        #expect(server.calls.count == 1)
    }

    @Test func aSilentDaemonTimesOut() throws {
        let dir = try FakeVarlinkServer.temporaryDirectory()
        let server = try FakeVarlinkServer(path: dir + "/s") { _, _ in }
        defer { server.stop() }
        let channel = CallChannel(path: server.path, timeout: 0.1)
        let before = channel.generation
        do {
            try channel.call("io.bgtaskd.App.RefreshStatus")
            Issue.record("expected a timeout")
        } catch {
            guard case .disconnected = error else { Issue.record("unexpected \(error)"); return }
        }
        #expect(channel.generation == before + 1)
    }

    @Test func noDaemon() throws {
        let dir = try FakeVarlinkServer.temporaryDirectory()
        let channel = CallChannel(path: dir + "/nothing")
        do {
            try channel.call("io.bgtaskd.App.RefreshStatus")
            Issue.record("expected cannotConnect")
        } catch {
            guard case .cannotConnect = error else { Issue.record("unexpected \(error)"); return }
        }
    }

    @Test func aContinuingReplyToAPlainCallIsRefused() throws {
        let dir = try FakeVarlinkServer.temporaryDirectory()
        let server = try FakeVarlinkServer(path: dir + "/s") { _, peer in peer.reply([:], continues: true) }
        defer { server.stop() }
        let channel = CallChannel(path: server.path)
        #expect(throws: BGTaskClientError.invalidReply("io.bgtaskd.App.RefreshStatus answered with continues")) {
            try channel.call("io.bgtaskd.App.RefreshStatus")
        }
    }
}

/// A CheckIn peer: answers the first reply, remembers the stream so the test can push events.
final class FakeDaemon: Sendable {
    let server: FakeVarlinkServer
    let streams = Recorder<FakePeer>()
    let nextTask = Recorder<Int>()

    init(path: String, refuseFirstCheckIns: Int = 0, remaining: JSON = 2_500_000) throws {
        let streams = self.streams
        let nextTask = self.nextTask
        let refusals = Recorder<Int>()
        server = try FakeVarlinkServer(path: path) { call, peer in
            switch call.methodName {
            case "CheckIn":
                guard call.more else { return peer.fail("org.varlink.service.ExpectedMore") }
                if refusals.count < refuseFirstCheckIns {
                    refusals.append(1)
                    return peer.fail("io.bgtaskd.App.NoSuchApp", ["appId": call.parameters["appId"] ?? nil])
                }
                streams.append(peer)
                peer.reply(["state": "not-running", "refreshStatus": "available"], continues: true)
            case "BeginBackgroundTask":
                nextTask.append(1)
                peer.reply(["taskId": .int(Int64(nextTask.count))])
            case "BackgroundTimeRemaining":
                peer.reply(["remainingUSec": remaining])
            case "SubmitTaskRequest":
                if call.parameters["identifier"] == "bad" {
                    peer.fail("io.bgtaskd.App.NotPermitted", ["identifier": "bad"])
                } else if call.parameters["identifier"] == "second" {
                    peer.fail("io.bgtaskd.App.TooManyPendingTaskRequests", ["kind": "refresh"])
                } else {
                    peer.reply()
                }
            case "PendingTaskRequests":
                peer.reply(["requests": [["identifier": "r", "kind": "refresh", "earliestBeginUSec": nil, "requiresNetwork": false, "requiresExternalPower": false]]])
            default:
                peer.reply()
            }
        }
    }

    /// Pushes one event on stream `n` (1-based), in a reply of its own.
    func push(_ event: [String: JSON], state: String = "background", stream n: Int = 1) {
        let all = streams.all
        guard all.count >= n else { return }
        all[n - 1].reply(["state": .string(state), "refreshStatus": "available", "event": .object(event)], continues: true)
    }

    func calls(_ method: String) -> [VarlinkCall] { server.calls.filter { $0.methodName == method } }
}

@Suite struct EventStreamTests {
    func sessions(_ inputs: [EventStream.Input]) -> [String] {
        inputs.map { input in
            switch input {
            case .checkedIn(_, let s): return "checked-in \(s)"
            case .event(let reply, let s): return "\(reply.event?.kind.rawValue ?? "update") \(s)"
            case .lost(_, let s): return "lost \(s)"
            case .checkInFailed(let e, _): return "failed \(e.name)"
            }
        }
    }

    @Test func repliesArriveInOrderHoweverTheyAreChunked() async throws {
        let dir = try FakeVarlinkServer.temporaryDirectory()
        let daemon = try FakeDaemon(path: dir + "/s")
        defer { daemon.server.stop() }
        let inputs = Recorder<EventStream.Input>()
        let stream = EventStream(appID: "org.example.Mail", path: daemon.server.path, backoff: Backoff(initial: 0.01, maximum: 0.05)) {
            inputs.append($0)
        }
        stream.start()
        defer { stream.stop() }
        #expect(await eventually { daemon.streams.count == 1 })
        let checkIn = try #require(daemon.calls("CheckIn").first)
        #expect(checkIn.more)
        #expect(checkIn.parameters == ["appId": "org.example.Mail"])

        func event(_ id: Int64, _ kind: String) -> [UInt8] {
            VarlinkReply(
                parameters: ["state": "background", "refreshStatus": "available",
                             "event": ["id": .int(id), "kind": .string(kind), "state": "background", "needsAck": false]],
                continues: true
            ).encoded()
        }
        let peer = daemon.streams.all[0]
        peer.write(event(1, "will-resign-active") + event(2, "did-enter-background"))  // two in one write
        for byte in event(3, "memory-warning") { peer.write([byte]) }  // one drip-fed
        #expect(await eventually { inputs.count == 4 })
        #expect(sessions(inputs.all) == ["checked-in 1", "will-resign-active 1", "did-enter-background 1", "memory-warning 1"])
    }

    @Test func reconnectsAndChecksInAgainWhenTheStreamCloses() async throws {
        let dir = try FakeVarlinkServer.temporaryDirectory()
        let daemon = try FakeDaemon(path: dir + "/s")
        defer { daemon.server.stop() }
        let inputs = Recorder<EventStream.Input>()
        let stream = EventStream(appID: "a", path: daemon.server.path, backoff: Backoff(initial: 0.01, maximum: 0.05)) { inputs.append($0) }
        stream.start()
        defer { stream.stop() }
        #expect(await eventually { daemon.streams.count == 1 })
        // Closed once the client has its first reply: the fake daemon lists the stream before it answers it,
        // and a close before that answer is a failed check-in, not a lost stream.
        #expect(await eventually { inputs.count == 1 })
        daemon.streams.all[0].close()
        #expect(await eventually { daemon.streams.count == 2 })
        #expect(await eventually { inputs.count == 3 })
        #expect(sessions(inputs.all) == ["checked-in 1", "lost 1", "checked-in 2"])
    }

    @Test func aRefusedCheckInIsRetriedAndUsesNoSession() async throws {
        let dir = try FakeVarlinkServer.temporaryDirectory()
        let daemon = try FakeDaemon(path: dir + "/s", refuseFirstCheckIns: 2)
        defer { daemon.server.stop() }
        let inputs = Recorder<EventStream.Input>()
        let stream = EventStream(appID: "a", path: daemon.server.path, backoff: Backoff(initial: 0.01, maximum: 0.05)) { inputs.append($0) }
        stream.start()
        defer { stream.stop() }
        #expect(await eventually { daemon.streams.count == 1 })
        #expect(await eventually { inputs.count == 3 })
        #expect(sessions(inputs.all) == ["failed NoSuchApp", "failed NoSuchApp", "checked-in 1"])
    }

    @Test func waitsForADaemonThatIsGoneAndComesBack() async throws {
        let dir = try FakeVarlinkServer.temporaryDirectory()
        let first = try FakeDaemon(path: dir + "/s")
        let inputs = Recorder<EventStream.Input>()
        let stream = EventStream(appID: "a", path: first.server.path, backoff: Backoff(initial: 0.01, maximum: 0.05)) { inputs.append($0) }
        stream.start()
        defer { stream.stop() }
        #expect(await eventually { first.streams.count == 1 })
        first.server.stop()
        #expect(await eventually { inputs.all.contains { if case .checkInFailed(.cannotConnect, _) = $0 { true } else { false } } })
        let second = try FakeDaemon(path: dir + "/s")
        defer { second.server.stop() }
        #expect(await eventually { second.streams.count == 1 })
        #expect(await eventually { sessions(inputs.all).last == "checked-in 2" })
        let names = sessions(inputs.all)
        #expect(names.first == "checked-in 1")
        #expect(names.dropFirst().first == "lost 1")
        #expect(names.dropFirst(2).dropLast().allSatisfy { $0 == "failed cannot-connect" })
    }

    @Test func stopEndsTheStreamForGood() async throws {
        let dir = try FakeVarlinkServer.temporaryDirectory()
        let daemon = try FakeDaemon(path: dir + "/s")
        defer { daemon.server.stop() }
        let inputs = Recorder<EventStream.Input>()
        let stream = EventStream(appID: "a", path: daemon.server.path, backoff: Backoff(initial: 0.01, maximum: 0.05)) { inputs.append($0) }
        stream.start()
        #expect(await eventually { daemon.streams.count == 1 })
        stream.stop()
        // The stream's thread has returned: no reconnection can follow (rather than watching for one).
        #expect(stream.waitUntilFinished(seconds: 5))
        #expect(daemon.streams.count == 1)
        #expect(sessions(inputs.all) == ["checked-in 1"])
    }
}
