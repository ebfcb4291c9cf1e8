import BGTaskConfig
import BGTaskCore
import BGTaskProtocol
import BGTaskVarlink
import Dispatch
import Foundation
import Logging
import Synchronization
import Testing
@testable import BGTaskDaemon

// The daemon's service driven without sockets, processes or timers: calls go in through in-memory
// connections (the server's own checks included), time is stepped by hand, and what comes out — replies,
// freeze/thaw/signal/kill, spawns, decisions (the Monitor stream, which carries what is journaled) — is
// recorded by fakes.

/// Everything the fakes saw, in order.
private final class Recorder: @unchecked Sendable {
    // @unchecked: touched on the daemon's queue, read by the test after a `queue.sync`.
    var processes: [String] = []
}

/// A freezer that only records (`cgroup`-like: not a dry run).
private final class FakeFreezer: Freezer, @unchecked Sendable {
    let recorder: Recorder
    init(_ recorder: Recorder) { self.recorder = recorder }
    var name: String { "fake" }
    var onFrozen: ((AppID) -> Void)?
    /// Whether a freeze is done at once (as `cgroup.events` usually says `frozen 1` on the first read);
    /// false: it is done when the test calls `frozen(_:)`.
    var doneAtOnce = true
    func prepareLaunch(app: AppID) -> Int32? { nil }
    func attach(app: AppID, pid: Int32) { recorder.processes.append("attach \(app) \(pid)") }
    func freeze(app: AppID, pid: Int32?) -> FreezeFact {
        recorder.processes.append("freeze \(app) \(pid ?? 0)")
        if let freezeFails { return .failed(freezeFails) }
        return doneAtOnce ? .frozen : .notYet
    }
    /// What `freeze` says instead of `frozen`/`notYet` (a failed `cgroup.freeze` write).
    var freezeFails: String?
    /// What a look says: not done until the test says so (`frozen(_:)`, or this).
    var lookSays = FreezeFact.notYet
    func checkFreeze(app: AppID, pid: Int32?, late: Bool) -> FreezeFact {
        recorder.processes.append("check \(app) late=\(late)")
        return lookSays
    }
    func freezeWithSignals(app: AppID, pid: Int32?) -> FreezeFact {
        recorder.processes.append("freeze-with-signals \(app) \(pid ?? 0)")
        return .frozen
    }
    /// The freeze of `app` is done now (every process stopped).
    func frozen(_ app: AppID) { onFrozen?(app) }
    func thaw(app: AppID, pid: Int32?) {
        recorder.processes.append("thaw \(app) \(pid ?? 0)")
        onThaw?(app)
    }
    /// Called at each thaw (on the queue).
    var onThaw: ((AppID) -> Void)?
    func signal(app: AppID, pid: Int32?, _ sig: Int32) { recorder.processes.append("signal \(sig) \(app) \(pid ?? 0)") }
    func kill(app: AppID, pid: Int32?) { recorder.processes.append("kill \(app) \(pid ?? 0)") }
    func released(app: AppID) { recorder.processes.append("released \(app)") }
    func thawAll() {}
}

/// A launcher that hands out pids and reports exits when told to.
private final class FakeLauncher: AppLauncher, @unchecked Sendable {
    let recorder: Recorder
    var onExit: ((Int32, Int32?) -> Void)?
    private var nextPid: Int32 = 40_000
    private var running: Set<Int32> = []
    init(_ recorder: Recorder) { self.recorder = recorder }
    func start() {}
    func isRunningChild(_ pid: Int32) -> Bool { running.contains(pid) }
    func watch(pid: Int32) {}
    func spawn(_ manifest: AppManifestFile, socketPath: String, cgroupProcsFD: Int32?) -> Result<Int32, Launcher.LaunchError> {
        nextPid += 1
        let pid = pidToGive ?? nextPid
        running.insert(pid)
        recorder.processes.append("spawn \(manifest.id) \(pid)")
        return .success(pid)
    }
    /// The pid the next spawns report (a real process the test started), instead of a made-up one.
    var pidToGive: Int32?
    /// The pids `startedJustNow` names.
    var justStarted: Set<Int32> = []
    func startedJustNow(_ pid: Int32) -> Bool { justStarted.contains(pid) }
    /// Remote launches whose answer the test gives (`answerRemote`), in order.
    var remoteAnswers: [@Sendable (Result<Int32, Launcher.LaunchError>) -> Void] = []
    func spawnRemotely(appID: String, socketPath: String, launcherSocket: String, cgroupProcsFD: Int32?,
                       completion: @escaping @Sendable (Result<Int32, Launcher.LaunchError>) -> Void)
    {
        remoteAnswers.append(completion)
    }
    /// The remote launcher answers its oldest launch: it started `pid`.
    func answerRemote(pid: Int32) {
        running.insert(pid)
        recorder.processes.append("remote spawn \(pid)")
        remoteAnswers.removeFirst()(.success(pid))
    }
    /// The process ended (as SIGCHLD would report it).
    func exited(_ pid: Int32) {
        running.remove(pid)
        onExit?(pid, 0)
    }
    /// Every process it started ended.
    func exitedAll() {
        for pid in running.sorted() { exited(pid) }
    }
}

/// Both clocks, stepped by hand.
private final class HandClock: Sendable {
    let monotonicUSec = Atomic<Int64>(1_000_000_000)
    // From the real wall clock's now: the service's one wall-clock Dispatch timer is real, and armed for a
    // date in the past it would fire at once, again and again, while the test steps time by hand.
    let realtimeUSec = Atomic<Int64>(Int64(Date().timeIntervalSince1970 * 1_000_000))
    var clock: DaemonClock {
        DaemonClock(
            monotonic: { Instant(microseconds: self.monotonicUSec.load(ordering: .relaxed)) },
            realtime: { RealtimeInstant(microsecondsSinceEpoch: self.realtimeUSec.load(ordering: .relaxed)) })
    }
    func advance(_ span: TimeSpan) {
        monotonicUSec.add(span.microseconds, ordering: .relaxed)
        realtimeUSec.add(span.microseconds, ordering: .relaxed)
    }
}

/// A client's in-memory connection and every reply it got.
private final class Client: @unchecked Sendable {
    // @unchecked: replies are appended on the daemon's queue and read after a `queue.sync`.
    var replies: [VarlinkReply] = []
    let arrived = DispatchSemaphore(value: 0)
    var connection: VarlinkConnection?
}

private let mail = AppID("org.example.Mail")!
private let refreshID = "org.example.Mail.refresh"

/// Harnesses live until the process ends: a service's Dispatch timer may be suspended when the test
/// ends, and libdispatch traps on releasing a suspended source (the daemon's service never goes away).
private let keptAlive = Mutex<[AnyObject]>([])

/// A service on its own queue with fakes around it.
private final class ServiceHarness: @unchecked Sendable {
    let queue = DispatchQueue(label: "bgtaskd.test.service")
    let recorder = Recorder()
    let freezer: FakeFreezer
    let launcher: FakeLauncher
    let time = HandClock()
    let stateDir: String
    let journal = JournalSink(identifier: "bgtaskd-servicetest", destination: .journal)
    var service: DaemonService!
    var server: VarlinkServer!

    /// `others`: more apps beside Mail.
    init(daemon: DaemonConfig = ServiceHarness.daemonConfig, launcherSocket: String? = nil, others: [AppManifestFile] = []) throws {
        freezer = FakeFreezer(recorder)
        launcher = FakeLauncher(recorder)
        stateDir = NSTemporaryDirectory() + "bgtaskd-servicetest-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: stateDir, withIntermediateDirectories: true)
        let manifest = AppManifestFile(
            id: mail.rawValue, exec: ["/bin/true"], backgroundModes: [.fetch, .remoteNotification],
            permittedTaskIdentifiers: [refreshID])
        var manifests = [mail: manifest]
        for other in others { manifests[AppID(other.id)!] = other }
        var config = LoadedConfiguration(
            daemon: daemon, manifests: manifests, socketPath: "/nonexistent/bgtaskd-servicetest.sock",
            controlGroupID: nil, warnings: [])
        config.launcherSocketPath = launcherSocket
        var options = DaemonOptions()
        options.stateDir = stateDir
        let logger = Logger(label: "bgtaskd-servicetest") { _ in SwiftLogNoOpLogHandler() }
        queue.sync {
            service = DaemonService(
                queue: queue, config: config, journal: journal, logger: logger, options: options, freezer: freezer,
                launcher: launcher, clock: time.clock, powerSupplyPath: nil)
            server = VarlinkServer(queue: queue, service: service)
            service.server = server
            // Stepped synchronously: the lock check before a freeze is answered at once (SPEC §14).
            service.lockReadsOffQueue = false
        }
        // The refresh shell starts on the queue's next turn.
        queue.sync {}
        keptAlive.withLock { $0.append(self) }
    }

    /// The state directory goes with the test (the harness itself stays, see `keptAlive`).
    func removeStateDirectory() {
        queue.sync {}
        try? FileManager.default.removeItem(atPath: stateDir)
    }

    static var daemonConfig: DaemonConfig {
        var d = DaemonConfig()
        d.apps.adopt = false
        return d
    }

    func connect(uid: UInt32 = 0, pid: Int32 = 1) -> Client {
        let client = Client()
        queue.sync {
            client.connection = server.inMemoryConnection(peer: PeerCredentials(pid: pid, uid: uid, gid: uid)) { reply in
                client.replies.append(reply)
                client.arrived.signal()
            }
        }
        return client
    }

    /// Serves one call; returns the replies that arrived while it was served (a later one: `awaitReply`).
    @discardableResult
    func call(_ client: Client, _ method: String, _ parameters: [String: JSON] = [:], more: Bool = false) -> [VarlinkReply] {
        queue.sync {
            let before = client.replies.count
            guard let connection = client.connection else { return [] }
            server.serveInMemory(VarlinkCall(method: method, parameters: parameters, more: more), on: connection)
            return Array(client.replies[before...])
        }
    }

    /// Waits for the client's next reply (one that comes once a state file is written, off the queue).
    func awaitReply(_ client: Client, after count: Int) -> VarlinkReply? {
        while queue.sync(execute: { client.replies.count }) <= count {
            guard client.arrived.wait(timeout: .now() + 10) == .success else { return nil }
        }
        return queue.sync { client.replies[count] }
    }

    var processes: [String] { queue.sync { recorder.processes } }

    /// The id of the last event of `kind` on the app's CheckIn stream.
    func lastEvent(_ client: Client, _ kind: String) -> JSON? {
        queue.sync {
            client.replies.last { $0.parameters["event"]?.objectValue?["kind"]?.stringValue == kind }?
                .parameters["event"]?.objectValue?["id"]
        }
    }

    /// Time passes; the monotonic timer's wake-up is fed by hand (as its handler would).
    func advance(_ span: TimeSpan) {
        time.advance(span)
        queue.sync { service.deadlineReached() }
    }

    func decisions(_ monitor: Client) -> [(decision: String, reason: String)] {
        queue.sync {
            monitor.replies.compactMap { r in
                guard case .object(let d)? = r.parameters["decision"], let kind = d["decision"]?.stringValue,
                    let reason = d["reason"]?.stringValue
                else { return nil }
                return (kind, reason)
            }
        }
    }
}

@Suite(.serialized) struct DaemonServiceTests {
    @Test func aBackgroundAppIsFrozenWhenItsLastTaskEndsAndThawedInTheForeground() throws {
        let h = try ServiceHarness()
        defer { h.removeStateDirectory() }
        let ctl = h.connect()
        let monitor = h.connect()
        #expect(h.call(monitor, "io.bgtaskd.Manager.Monitor", more: true).isEmpty)

        let launched = h.call(ctl, "io.bgtaskd.Manager.Launch", ["appId": .string(mail.rawValue)])
        #expect(launched.map(\.error) == [nil])
        let pid = try #require(h.processes.first.flatMap { Int32($0.split(separator: " ").last ?? "") })
        #expect(h.processes == ["spawn \(mail) \(pid)"])

        let app = h.connect(uid: 0, pid: pid)
        let checkIn = h.call(app, "io.bgtaskd.App.CheckIn", ["appId": .string(mail.rawValue)], more: true)
        // The stream opens with the state at check-in, then the launch's events follow on it.
        #expect(checkIn.map { $0.parameters["state"]?.stringValue } == ["not-running", "inactive", "active"])
        #expect(checkIn.allSatisfy { $0.continues })
        // A stream holds its connection: the app's calls go on a second one (as BGTaskClient does).
        let calls = h.connect(uid: 0, pid: pid)

        // In the background with a task it runs; when the task ends it is frozen.
        let begin = h.call(calls, "io.bgtaskd.App.BeginBackgroundTask", ["appId": .string(mail.rawValue)])
        let taskID = try #require(begin.first?.parameters["taskId"])
        #expect(h.call(ctl, "io.bgtaskd.Manager.Background", ["appId": .string(mail.rawValue)]).map(\.error) == [nil])
        let entered = try #require(h.lastEvent(app, "did-enter-background"))
        h.call(calls, "io.bgtaskd.App.Acknowledge", ["eventId": entered])
        #expect(!h.processes.contains("freeze \(mail) \(pid)"))
        h.call(calls, "io.bgtaskd.App.EndBackgroundTask", ["appId": .string(mail.rawValue), "taskId": taskID])
        #expect(h.processes.last == "freeze \(mail) \(pid)")

        #expect(h.call(ctl, "io.bgtaskd.Manager.Foreground", ["appId": .string(mail.rawValue)]).map(\.error) == [nil])
        #expect(h.processes.last == "thaw \(mail) \(pid)")
        let kinds = h.decisions(monitor).map(\.decision)
        #expect(kinds.starts(with: ["launch"]))
        #expect(kinds.contains("suspend") && kinds.contains("resume"))
    }

    /// In a turn of the Varlink server the timer is set once, at its end, for the deadline the turn's calls
    /// left: a launch arms its check-in deadline and the check-in cancels it, so a turn holding both sets
    /// nothing, where the same calls outside a turn set the timer twice (armed, then suspended).
    @Test func theTimerIsSetOnceATurnForTheDeadlineItsCallsLeft() throws {
        let h = try ServiceHarness()
        defer { h.removeStateDirectory() }
        let ctl = h.connect()
        func launchAndCheckIn() throws {
            let before = h.processes.count
            #expect(h.call(ctl, "io.bgtaskd.Manager.Launch", ["appId": .string(mail.rawValue)]).map(\.error) == [nil])
            let spawned = try #require(h.processes.dropFirst(before).first { $0.hasPrefix("spawn ") })
            let pid = try #require(Int32(spawned.split(separator: " ").last ?? ""))
            let app = h.connect(uid: 0, pid: pid)
            #expect(!h.call(app, "io.bgtaskd.App.CheckIn", ["appId": .string(mail.rawValue)], more: true).isEmpty)
            h.call(ctl, "io.bgtaskd.Manager.Terminate", ["appId": .string(mail.rawValue)])
            h.queue.sync { h.launcher.exitedAll() }
        }
        // Outside a turn: armed by the launch, suspended at the check-in.
        var settings = h.queue.sync { h.service.timerSettings }
        try launchAndCheckIn()
        let unheld = h.queue.sync { h.service.timerSettings } - settings
        #expect(unheld >= 2, "the launch's deadline armed the timer and the check-in suspended it: \(unheld)")

        // In a turn: nothing while it lasts, and nothing at its end (no deadline before, none after).
        h.queue.sync { h.service.holdTimer() }
        settings = h.queue.sync { h.service.timerSettings }
        try launchAndCheckIn()
        #expect(h.queue.sync { h.service.timerSettings } == settings)
        h.queue.sync { h.service.releaseTimer() }
        #expect(h.queue.sync { (h.service.timerSettings, h.service.armedDeadline) } == (settings, nil))

        // A deadline a turn leaves is armed at its end, for the core's next deadline.
        h.queue.sync { h.service.holdTimer() }
        #expect(h.call(ctl, "io.bgtaskd.Manager.Launch", ["appId": .string(mail.rawValue)]).map(\.error) == [nil])
        #expect(h.queue.sync { h.service.armedDeadline } == nil, "not armed inside the turn")
        h.queue.sync { h.service.releaseTimer() }
        let (armed, next) = h.queue.sync { (h.service.armedDeadline, h.service.core.peekNextDeadline()) }
        #expect(armed != nil && armed == next)
    }

    /// The timer's work is a turn of the Varlink server (`VarlinkServer.asTurn`): the daemon's hooks run
    /// around it (they hold the journal writer's wake-ups and the timer's re-arming until its end), once,
    /// and a deadline it leaves is armed at that end. Within a turn it is part of that turn.
    @Test func theTimersWorkIsOneTurnOfTheServer() throws {
        let h = try ServiceHarness()
        defer { h.removeStateDirectory() }
        let ctl = h.connect()
        nonisolated(unsafe) var log: [String] = []
        h.queue.sync {
            h.server.beforeTurn = { [service = h.service!] in
                log.append("before")
                service.holdTimer()
            }
            h.server.afterTurn = { [service = h.service!] in
                log.append("after")
                service.releaseTimer()
            }
        }
        // A launch leaves its check-in deadline: armed by the turn's end, not within it.
        h.queue.sync {
            h.service.timerFired()
            h.server.asTurn {
                log.append("call")
                h.service.timerFired()
            }
        }
        #expect(log == ["before", "after", "before", "call", "after"])
        #expect(h.call(ctl, "io.bgtaskd.Manager.Launch", ["appId": .string(mail.rawValue)]).map(\.error) == [nil])
        h.queue.sync {
            h.service.timerFired()
        }
        let (armed, next) = h.queue.sync { (h.service.armedDeadline, h.service.core.peekNextDeadline()) }
        #expect(armed != nil && armed == next)
        h.queue.sync {
            h.server.beforeTurn = nil
            h.server.afterTurn = nil
        }
    }

    /// SPEC §16: a process the launcher says it started just now is not read at its launch (its /proc times
    /// would read 0 ticks): the period the launch begins is charged from 0. Here the app is a plain program
    /// (`LifecycleAware=no`: in the background at its spawn, the period begins with the pid known) whose
    /// "process" is a real one that has already used CPU time (a shell's busy loop, then `sleep`), so the
    /// two ways differ: with the launcher's word the period its termination ends is charged that whole time;
    /// without it, the reading at the launch is that time too and the period is charged about nothing.
    @Test func aProcessStartedJustNowIsNotReadAtItsLaunch() throws {
        let plain = AppManifestFile(id: "org.example.Plain", exec: ["/bin/true"], lifecycleAware: false)
        let plainID = AppID(plain.id)!
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/sh")
        // The shell says when its loop is done (then its CPU time no longer grows), and sleeps.
        child.arguments = ["-c", "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done; echo looped; exec sleep 60"]
        let said = Pipe()
        child.standardOutput = said
        try child.run()
        let pid = child.processIdentifier
        // SIGKILL: the test process ignores SIGTERM (the daemon's signal sources), and so does its child.
        defer { kill(pid, SIGKILL); child.waitUntilExit() }
        let line = String(decoding: said.fileHandleForReading.availableData, as: UTF8.self)
        try #require(line == "looped\n", "the shell said \(line.debugDescription)")
        let used = try #require(EnergyMeter.usage(cgroupPath: nil, mount: nil, pid: pid, adopted: []))
        #expect(used >= 50_000, "the loop used \(used) µs of CPU: too little to tell the two ways apart")

        func charged(launcherSaysJustStarted: Bool) throws -> Int64 {
            let h = try ServiceHarness(others: [plain])
            defer { h.removeStateDirectory() }
            let ctl = h.connect()
            h.queue.sync {
                h.launcher.pidToGive = pid
                h.launcher.justStarted = launcherSaysJustStarted ? [pid] : []
            }
            let launch = h.call(ctl, "io.bgtaskd.Manager.Launch", ["appId": .string(plainID.rawValue), "background": .bool(true)])
            #expect(launch.map(\.error) == [nil])
            #expect(h.processes.contains("spawn \(plainID) \(pid)"))
            h.queue.sync { h.launcher.justStarted = [] }
            #expect(h.call(ctl, "io.bgtaskd.Manager.Terminate", ["appId": .string(plainID.rawValue)]).map(\.error) == [nil])
            return h.queue.sync { h.service.appEnergy(plainID).total.backgroundCPUUSec }
        }
        let fromZero = try charged(launcherSaysJustStarted: true)
        let read = try charged(launcherSaysJustStarted: false)
        #expect(fromZero >= used, "charged \(fromZero) µs; the process had used \(used) before its launch")
        #expect(read < 20_000, "read at its launch, the period is charged only what the process used since: \(read) µs")
    }

    /// The resume path: the events a thaw enables are written to the app's stream before the thaw (a frozen
    /// app cannot read them sooner; thawed, it finds them waiting), and the caller's reply comes after it.
    @Test func aResumedAppsEventsAreWrittenBeforeItsThawAndTheReplyAfter() throws {
        let h = try ServiceHarness()
        defer { h.removeStateDirectory() }
        let ctl = h.connect()
        let (pid, app) = try h.launchAndSuspend(mail, ctl: ctl)

        var atThaw: (events: [String], ctlReplies: Int)?
        let before = h.queue.sync { (app.replies.count, ctl.replies.count) }
        h.queue.sync {
            h.freezer.onThaw = { _ in
                atThaw = (app.replies[before.0...].compactMap { $0.parameters["event"]?.objectValue?["kind"]?.stringValue },
                          ctl.replies.count - before.1)
            }
        }
        #expect(h.call(ctl, "io.bgtaskd.Manager.Foreground", ["appId": .string(mail.rawValue)]).map(\.error) == [nil])
        #expect(h.processes.last == "thaw \(mail) \(pid)")
        let seen = try #require(atThaw)
        #expect(seen.events == ["will-enter-foreground", "did-become-active"], "\(seen)")
        #expect(seen.ctlReplies == 0)
    }

    /// The decisions taken with a thaw (the resume, then the foreground decision of the tap) are published
    /// after it, in their order: Monitor (and the journal, and Explain) sees neither at the thaw, both after.
    @Test func aResumesDecisionsArePublishedAfterItsThawInTheirOrder() throws {
        let h = try ServiceHarness()
        defer { h.removeStateDirectory() }
        let ctl = h.connect()
        let monitor = h.connect()
        h.call(monitor, "io.bgtaskd.Manager.Monitor", more: true)
        _ = try h.launchAndSuspend(mail, ctl: ctl)

        let before = h.decisions(monitor).count
        var atThaw: Int?
        h.queue.sync { h.freezer.onThaw = { _ in atThaw = monitor.replies.count } }
        let monitorRepliesBefore = h.queue.sync { monitor.replies.count }
        #expect(h.call(ctl, "io.bgtaskd.Manager.Foreground", ["appId": .string(mail.rawValue)]).map(\.error) == [nil])
        #expect(atThaw == monitorRepliesBefore, "a decision was published before the thaw")
        let after = h.decisions(monitor)[before...].map { "\($0.decision) \($0.reason)" }
        #expect(after == ["resume user-request", "foreground user-request"], "\(after)")
    }

    /// SPEC §9: with a freezer that finds the freeze not done at once (SIGSTOP pending on busy processes),
    /// the app stays `background` and no `suspend` decision goes out (Monitor, the journal) until the
    /// freezer reports the freeze done; then both at once.
    @Test func anAppIsReportedSuspendedOnlyOnceTheFreezerSaysItsFreezeIsDone() throws {
        let h = try ServiceHarness()
        defer { h.removeStateDirectory() }
        h.queue.sync { h.freezer.doneAtOnce = false }
        let ctl = h.connect()
        let monitor = h.connect()
        h.call(monitor, "io.bgtaskd.Manager.Monitor", more: true)
        h.call(ctl, "io.bgtaskd.Manager.Launch", ["appId": .string(mail.rawValue)])
        let pid = try #require(h.processes.first.flatMap { Int32($0.split(separator: " ").last ?? "") })
        let app = h.connect(uid: 0, pid: pid)
        h.call(app, "io.bgtaskd.App.CheckIn", ["appId": .string(mail.rawValue)], more: true)
        let calls = h.connect(uid: 0, pid: pid)
        h.call(ctl, "io.bgtaskd.Manager.Background", ["appId": .string(mail.rawValue)])
        let entered = try #require(h.lastEvent(app, "did-enter-background"))
        h.call(calls, "io.bgtaskd.App.Acknowledge", ["eventId": entered])
        #expect(h.processes.last == "freeze \(mail) \(pid)")

        func state() -> String? {
            h.call(ctl, "io.bgtaskd.Manager.GetApp", ["appId": .string(mail.rawValue)]).first?
                .parameters["app"]?.objectValue?["state"]?.stringValue
        }
        #expect(state() == "background")
        #expect(!h.decisions(monitor).map(\.decision).contains("suspend"))

        h.queue.sync { h.freezer.frozen(mail) }
        #expect(state() == "suspended")
        #expect(h.decisions(monitor).filter { $0.decision == "suspend" }.map(\.reason) == ["no-assertions"])
        // A second report of the same freeze changes nothing.
        h.queue.sync { h.freezer.frozen(mail) }
        #expect(h.decisions(monitor).filter { $0.decision == "suspend" }.count == 1)
    }

    /// The shell looks at a freeze not done only when the core's deadline says so (none 1 µs before it), and
    /// performs the core's fallback to SIGSTOP when the freezer cannot freeze (DaemonCore+Freezes.swift).
    @Test func theShellLooksAtAFreezeAtTheCoresDeadlineAndFallsBackToSignalsOnItsDecision() throws {
        for fails in [false, true] {
            let h = try ServiceHarness()
            defer { h.removeStateDirectory() }
            h.queue.sync {
                h.freezer.doneAtOnce = false
                h.freezer.freezeFails = fails ? "x/cgroup.freeze: Permission denied" : nil
            }
            let ctl = h.connect()
            let monitor = h.connect()
            h.call(monitor, "io.bgtaskd.Manager.Monitor", more: true)
            h.call(ctl, "io.bgtaskd.Manager.Launch", ["appId": .string(mail.rawValue)])
            let pid = try #require(h.processes.first.flatMap { Int32($0.split(separator: " ").last ?? "") })
            let app = h.connect(uid: 0, pid: pid)
            h.call(app, "io.bgtaskd.App.CheckIn", ["appId": .string(mail.rawValue)], more: true)
            let calls = h.connect(uid: 0, pid: pid)
            h.call(ctl, "io.bgtaskd.Manager.Background", ["appId": .string(mail.rawValue)])
            let entered = try #require(h.lastEvent(app, "did-enter-background"))
            h.call(calls, "io.bgtaskd.App.Acknowledge", ["eventId": entered])
            if fails {
                #expect(h.processes.suffix(2) == ["freeze \(mail) \(pid)", "freeze-with-signals \(mail) \(pid)"])
                #expect(h.decisions(monitor).filter { $0.decision == "policy" }.map(\.reason) == ["freeze-fallback"])
                #expect(h.decisions(monitor).filter { $0.decision == "suspend" }.map(\.reason) == ["no-assertions"])
                continue
            }
            #expect(h.processes.last == "freeze \(mail) \(pid)")
            h.advance(.microseconds(499))
            #expect(h.processes.last == "freeze \(mail) \(pid)")
            h.advance(.microseconds(1))
            #expect(h.processes.last == "check \(mail) late=false")
            #expect(!h.decisions(monitor).map(\.decision).contains("suspend"))
            h.queue.sync { h.freezer.lookSays = .frozen }
            h.advance(.microseconds(999))
            #expect(h.processes.last == "check \(mail) late=false")
            #expect(h.processes.filter { $0.hasPrefix("check") }.count == 1)
            h.advance(.microseconds(1))
            #expect(h.processes.filter { $0.hasPrefix("check") }.count == 2)
            #expect(h.decisions(monitor).filter { $0.decision == "suspend" }.map(\.reason) == ["no-assertions"])
        }
    }

    @Test func aTerminatedAppIsKilledWhenItOutlivesItsTimeouts() throws {
        let h = try ServiceHarness()
        defer { h.removeStateDirectory() }
        let ctl = h.connect()
        h.call(ctl, "io.bgtaskd.Manager.Launch", ["appId": .string(mail.rawValue), "background": true])
        let pid = try #require(h.processes.first.flatMap { Int32($0.split(separator: " ").last ?? "") })
        let app = h.connect(uid: 0, pid: pid)
        h.call(app, "io.bgtaskd.App.CheckIn", ["appId": .string(mail.rawValue)], more: true)

        #expect(h.call(ctl, "io.bgtaskd.Manager.Terminate", ["appId": .string(mail.rawValue)]).map(\.error) == [nil])
        let d = ServiceHarness.daemonConfig
        // At each timeout's boundary: 1 µs before it nothing happens, at it the next step does.
        h.advance(.microseconds(d.willTerminateTimeoutUSec - 1))
        #expect(!h.processes.contains("signal \(SIGTERM) \(mail) \(pid)"))
        h.advance(.microseconds(1))
        #expect(h.processes.last == "signal \(SIGTERM) \(mail) \(pid)")
        h.advance(.microseconds(d.killTimeoutUSec - 1))
        #expect(!h.processes.contains("kill \(mail) \(pid)"))
        h.advance(.microseconds(1))
        #expect(h.processes.last == "kill \(mail) \(pid)")

        h.queue.sync { h.launcher.exited(pid) }
        #expect(h.processes.last == "released \(mail)")
        let apps = h.call(ctl, "io.bgtaskd.Manager.GetApp", ["appId": .string(mail.rawValue)])
        #expect(apps.first?.parameters["app"]?.objectValue?["state"]?.stringValue == "not-running")
    }

    /// SPEC §12 through the shell: the core's `.holdLost` ends the open Hold call it names with HoldLost
    /// (reason and message of the terminate decision); a refusal carries the state the core gave it.
    @Test func aHoldCallEndsWithHoldLostWhenItsAppIsTerminated() throws {
        let h = try ServiceHarness()
        defer { h.removeStateDirectory() }
        let ctl = h.connect()
        // (Background, not Terminate: terminating a stopped app succeeds, as systemd's StopUnit.)
        let refused = h.call(ctl, "io.bgtaskd.Manager.Background", ["appId": .string(mail.rawValue)])
        #expect(refused.map(\.error) == ["io.bgtaskd.Manager.InvalidState"])
        #expect(refused.first?.parameters["state"]?.stringValue == "not-running")

        h.call(ctl, "io.bgtaskd.Manager.Launch", ["appId": .string(mail.rawValue), "background": true])
        let pid = try #require(h.processes.first.flatMap { Int32($0.split(separator: " ").last ?? "") })
        h.call(h.connect(uid: 0, pid: pid), "io.bgtaskd.App.CheckIn", ["appId": .string(mail.rawValue)], more: true)
        let holder = h.connect()
        let held = h.call(holder, "io.bgtaskd.Manager.Hold", ["appId": .string(mail.rawValue)], more: true)
        #expect(held.count == 1 && held.first?.continues == true && held.first?.parameters["holdId"] != nil)
        #expect(h.call(ctl, "io.bgtaskd.Manager.Terminate", ["appId": .string(mail.rawValue)]).map(\.error) == [nil])
        let lost = h.queue.sync { holder.replies }
        #expect(lost.count == 2)
        #expect(lost.last?.error == "io.bgtaskd.Manager.HoldLost")
        #expect(lost.last?.parameters["appId"]?.stringValue == mail.rawValue)
        #expect(lost.last?.parameters["reason"]?.stringValue == "user-request")
        #expect(lost.last?.parameters["message"]?.stringValue?.isEmpty == false)
        // The escalation decides again; the call was ended once.
        let d = ServiceHarness.daemonConfig
        h.advance(.microseconds(d.killTimeoutUSec))
        h.advance(.microseconds(d.killTimeoutUSec))
        #expect(h.queue.sync { holder.replies.count } == 2)
    }

    @Test func callsFromAnotherUserAreRefusedAndJournaled() throws {
        let h = try ServiceHarness()
        defer { h.removeStateDirectory() }
        let monitor = h.connect()
        h.call(monitor, "io.bgtaskd.Manager.Monitor", more: true)
        let stranger = h.connect(uid: 4242, pid: 77)
        let replies = h.call(stranger, "io.bgtaskd.App.BeginBackgroundTask", ["appId": .string(mail.rawValue)])
        #expect(replies.map(\.error) == ["io.bgtaskd.App.PermissionDenied"])
        #expect(h.decisions(monitor).map(\.reason) == ["permission-denied"])
        // Control methods need root or ControlGroup=.
        let launch = h.call(stranger, "io.bgtaskd.Manager.Launch", ["appId": .string(mail.rawValue)])
        #expect(launch.map(\.error) == ["io.bgtaskd.Manager.PermissionDenied"])
        #expect(h.processes.isEmpty)
    }

    /// issue 13: the launcher answers after the launch was called off; the core decides the kill (with a
    /// journaled decision) and the shell performs it on the pid the action carries.
    @Test func aRemoteLaunchAnsweredAfterItWasCalledOffIsKilled() throws {
        let h = try ServiceHarness(launcherSocket: "/nonexistent/bgtaskd-launcher.sock")
        defer { h.removeStateDirectory() }
        let monitor = h.connect()
        h.call(monitor, "io.bgtaskd.Manager.Monitor", more: true)
        let ctl = h.connect()
        // Launch waits for the launcher's answer; Terminate calls the launch off meanwhile.
        #expect(h.call(ctl, "io.bgtaskd.Manager.Launch", ["appId": .string(mail.rawValue), "background": true]).isEmpty)
        #expect(h.call(ctl, "io.bgtaskd.Manager.Terminate", ["appId": .string(mail.rawValue)]).map(\.error) == [nil])
        h.queue.sync { h.launcher.answerRemote(pid: 41_234) }
        #expect(h.processes.suffix(2) == ["remote spawn 41234", "kill \(mail) 41234"])
        #expect(h.decisions(monitor).last.map { [$0.decision, $0.reason] } == ["terminate", "user-request"])
        let apps = h.call(ctl, "io.bgtaskd.Manager.GetApp", ["appId": .string(mail.rawValue)])
        #expect(apps.first?.parameters["app"]?.objectValue?["state"]?.stringValue == "not-running")
    }

    @Test func aScheduledTaskLaunchesTheAppWhenTheWallClockReachesItsDate() throws {
        let h = try ServiceHarness()
        defer { h.removeStateDirectory() }
        let app = h.connect()
        let begin = h.time.realtimeUSec.load(ordering: .relaxed) + 60_000_000
        let submitted = h.call(
            app, "io.bgtaskd.App.SubmitTaskRequest",
            ["appId": .string(mail.rawValue), "identifier": .string(refreshID), "kind": "refresh", "earliestBeginUSec": .int(begin)])
        // Answered once the state file holds it.
        let reply = h.awaitReply(app, after: submitted.count)
        #expect(submitted.isEmpty)
        #expect(reply?.error == nil)
        // SPEC §16: the timer is armed on the next WakeAlignmentSec=5min slot boundary at or after the date.
        let slot: Int64 = 300_000_000
        let aligned = (begin + slot - 1) / slot * slot
        #expect(h.queue.sync { h.service.core.refresh.nextWallDeadline } == RealtimeInstant(microsecondsSinceEpoch: aligned))

        h.time.advance(.seconds(60) - .microseconds(1))
        h.queue.sync { h.service.wallDeadlineReached() }
        #expect(h.processes.isEmpty)
        h.time.advance(.microseconds(1))
        h.queue.sync { h.service.wallDeadlineReached() }
        #expect(h.processes.count == 1)
        #expect(h.processes.first?.hasPrefix("spawn \(mail) ") == true)
        let pending = h.call(app, "io.bgtaskd.App.PendingTaskRequests", ["appId": .string(mail.rawValue)])
        #expect(pending.first?.parameters["requests"] == .array([]))
        // Looked at on start, at the submission and at each wake-up: nothing spins.
        #expect(h.queue.sync { h.service.core.refresh.plans } < 10)
    }

    @Test func aRefreshPolicyChangeIsJournaledAndAnsweredOnceSavedAndDeniesAWake() throws {
        let h = try ServiceHarness()
        defer { h.removeStateDirectory() }
        let monitor = h.connect()
        h.call(monitor, "io.bgtaskd.Manager.Monitor", more: true)
        let ctl = h.connect()
        let direct = h.call(ctl, "io.bgtaskd.Manager.SetLowPowerMode", ["enabled": true])
        #expect(direct.isEmpty, "answered before the state file was written")
        #expect(h.awaitReply(ctl, after: 0)?.error == nil)
        #expect(FileManager.default.fileExists(atPath: h.stateDir + "/" + StateStore.fileName))
        #expect(h.decisions(monitor).map { "\($0.decision)/\($0.reason)" } == ["policy/user-request"])

        let wake = h.call(ctl, "io.bgtaskd.Manager.WakeForRemoteNotification", ["appId": .string(mail.rawValue)])
        #expect(wake.map(\.error) == ["io.bgtaskd.Manager.Unavailable"])
        #expect(wake.first?.parameters["reason"] == "low-power-mode")
        #expect(h.decisions(monitor).last.map { "\($0.decision)/\($0.reason)" } == "deny/low-power-mode")
        #expect(h.processes.isEmpty)
    }

    /// ListApps' reply is written in parts, each on a thread of its own, and sent one after the other: the
    /// same text as the whole reply written from the typed structs on one thread, whatever the number of
    /// parts, with apps running, holding a task, in the background and with decisions in their history.
    /// SPEC §17: the ring packs what it can as the daemon takes it, and the inputs a full block keeps as
    /// values (notifications posted, here) are encoded off the queue: once the daemon has done so, no block
    /// waits, several blocks hold their values encoded, and the recording replays with no mismatch, its last
    /// inputs the calls made last.
    @Test func theRingsValuesAreEncodedOffTheQueueAndTheRecordingReplays() throws {
        var config = ServiceHarness.daemonConfig
        config.recordInputs = true
        config.recordMaxBytes = 64 << 10
        let h = try ServiceHarness(daemon: config)
        defer { h.removeStateDirectory() }
        let ctl = h.connect()
        #expect(h.call(ctl, "io.bgtaskd.Manager.Launch", ["appId": .string(mail.rawValue)]).map(\.error) == [nil])
        for k in 0..<600 {
            let posted = h.call(ctl, "io.bgtaskd.Manager.PostNotification", [
                "name": .string("n\(k)"), "appId": .string(mail.rawValue), "payload": .object(["k": .int(Int64(k))]),
            ])
            #expect(posted.map(\.error) == [nil])
            if k % 3 == 0 { h.call(ctl, "io.bgtaskd.Manager.Background", ["appId": .string(mail.rawValue)]) }
            if k % 3 == 1 { h.call(ctl, "io.bgtaskd.Manager.Foreground", ["appId": .string(mail.rawValue)]) }
        }
        // The encodings run on threads of their own, one after the other.
        var waited = 0
        while h.queue.sync(execute: { h.service.recording?.hasBlockToCompact != false || h.service.recording?.compacting != false }) {
            waited += 1
            #expect(waited < 1_000, "the blocks' values were not encoded in 10 s")
            if waited >= 1_000 { return }
            usleep(10_000)
        }
        let recorder = try #require(h.queue.sync { h.service.recording })
        let encoded = (recorder.older.map { [$0] } ?? []) + [recorder.current]
        let blocks = encoded.flatMap(\.blocks).filter { if case .compact = $0.others { return true } else { return false } }
        #expect(blocks.count >= 4, "\(blocks.count) blocks with their values encoded")
        let (recording, mismatches) = try recorder.checkedRecording()
        #expect(mismatches == 0)
        #expect(recording.inputsBefore > 0, "the ring let the start go")
        guard case .lifecycle(.notificationPosted(let name, _, _), _, _)? = recording.inputs.last(where: {
            if case .lifecycle(.notificationPosted, _, _) = $0.input { return true } else { return false }
        })?.input else {
            Issue.record("no notification in the recording")
            return
        }
        #expect(name == "n599")
        #expect(CoreReplay.run(try RecordReplayTests.roundTrip(recording)).difference == nil)
    }

    @Test func listAppsWrittenInPartsIsTheTextWrittenWhole() throws {
        let others = (0..<2_500).map { AppManifestFile(id: "org.example.P\($0)", exec: ["/bin/true"]) }
        let h = try ServiceHarness(others: others)
        defer { h.removeStateDirectory() }
        let ctl = h.connect()
        for app in [mail.rawValue, "org.example.P7", "org.example.P1999", "org.example.P2499"] {
            #expect(h.call(ctl, "io.bgtaskd.Manager.Launch", ["appId": .string(app)]).map(\.error) == [nil])
        }
        let pid = try #require(h.processes.first.flatMap { Int32($0.split(separator: " ").last ?? "") })
        let app = h.connect(uid: 0, pid: pid)
        #expect(!h.call(app, "io.bgtaskd.App.CheckIn", ["appId": .string(mail.rawValue)], more: true).isEmpty)
        let calls = h.connect(uid: 0, pid: pid)
        let begin = h.call(calls, "io.bgtaskd.App.BeginBackgroundTask", ["appId": .string(mail.rawValue)])
        #expect(begin.first?.parameters["taskId"] != nil)
        #expect(h.call(ctl, "io.bgtaskd.Manager.Background", ["appId": .string("org.example.P1999")]).map(\.error) == [nil])
        h.advance(.seconds(2))

        let (whole, inParts): ([UInt8], [[UInt8]]) = h.queue.sync {
            let t = h.service.now()
            let whole = VarlinkReply(ManagerWire.ListAppsReply(apps: h.service.machine.apps(now: t).map(h.service.appInfo)))
            let inParts = [1, 2, 3, 7, 64].map { VarlinkReply(h.service.listAppsReply(now: t, minimumPerPart: 1, parts: $0)).encoded() }
            return (whole.encoded(), inParts)
        }
        #expect(whole.count > 2_501 * 300)
        #expect(inParts.map { $0 == whole } == [true, true, true, true, true])
        // The call itself: every app, in identifier order, Mail's task in it.
        let listed = try #require(h.call(ctl, "io.bgtaskd.Manager.ListApps").first?.parameters["apps"]?.arrayValue)
        let ids = listed.compactMap { $0.objectValue?["appId"]?.stringValue }
        #expect(ids.count == 2_501 && ids == ids.sorted())
        let mailInfo = listed.first { $0.objectValue?["appId"]?.stringValue == mail.rawValue }
        #expect(mailInfo?.objectValue?["assertions"]?.arrayValue?.count == 1)
    }

    @Test func theJournalBudgetsIntervalEndIsServedByTheServicesOneTimer() throws {
        var d = ServiceHarness.daemonConfig
        d.journalAssertionBurst = 1
        d.journalAssertionIntervalUSec = 1_000_000
        let h = try ServiceHarness(daemon: d)
        defer { h.removeStateDirectory() }
        let ctl = h.connect()
        h.call(ctl, "io.bgtaskd.Manager.Launch", ["appId": .string(mail.rawValue), "background": true])
        let pid = try #require(h.processes.first.flatMap { Int32($0.split(separator: " ").last ?? "") })
        let app = h.connect(uid: 0, pid: pid)
        h.call(app, "io.bgtaskd.App.CheckIn", ["appId": .string(mail.rawValue)], more: true)
        let calls = h.connect(uid: 0, pid: pid)
        for _ in 0..<3 {
            let begin = h.call(calls, "io.bgtaskd.App.BeginBackgroundTask", ["appId": .string(mail.rawValue)])
            let id = try #require(begin.first?.parameters["taskId"])
            h.call(calls, "io.bgtaskd.App.EndBackgroundTask", ["appId": .string(mail.rawValue), "taskId": id])
        }
        let counted = h.queue.sync { h.service.journalBudget.coalesced }
        #expect(counted == 5)
        let deadline = try #require(h.queue.sync { h.service.journalBudget.nextDeadline })
        #expect(h.queue.sync { h.service.journalBudget.summaries } == 0)
        // The interval ends on the monotonic clock: a wake-up before it journals nothing, one at it the summary.
        h.time.advance(deadline - h.time.clock.monotonic() - .microseconds(1))
        h.queue.sync { h.service.deadlineReached() }
        #expect(h.queue.sync { h.service.journalBudget.nextDeadline } == deadline)
        h.advance(.microseconds(1))
        #expect(h.queue.sync { h.service.journalBudget.nextDeadline } == nil)
        #expect(h.queue.sync { h.service.journalBudget.summaries } == 1)
    }

    /// SPEC §14, `KernelWakeLock=yes`: the core's `.inhibitIdle` takes the kernel wake lock `bgtaskd` when a
    /// background task begins and releases it when the last one ends, a second later (Begin/End in a loop
    /// takes it once), and at once when the daemon stops. The machine has no
    /// /sys/power/wake_lock: the writer's directory points at a temporary one (its files made beforehand,
    /// as sysfs has them; nothing is created).
    @Test func liveWorkTakesTheKernelWakeLockAndTheLastEndReleasesIt() throws {
        var config = ServiceHarness.daemonConfig
        config.kernelWakeLock = true
        let h = try ServiceHarness(daemon: config)
        defer { h.removeStateDirectory() }
        let power = h.stateDir + "/power"
        try FileManager.default.createDirectory(atPath: power, withIntermediateDirectories: true)
        for name in ["wake_lock", "wake_unlock"] { _ = FileManager.default.createFile(atPath: power + "/" + name, contents: nil) }
        func read(_ name: String) -> String { (try? String(contentsOfFile: power + "/" + name, encoding: .utf8)) ?? "?" }
        h.queue.sync {
            h.service.wakeLock = KernelWakeLock(directory: power)
        }
        let ctl = h.connect()
        #expect(h.call(ctl, "io.bgtaskd.Manager.Launch", ["appId": .string(mail.rawValue)]).map(\.error) == [nil])
        let pid = try #require(h.processes.first.flatMap { Int32($0.split(separator: " ").last ?? "") })
        let app = h.connect(uid: 0, pid: pid)
        _ = h.call(app, "io.bgtaskd.App.CheckIn", ["appId": .string(mail.rawValue)], more: true)
        let calls = h.connect(uid: 0, pid: pid)
        #expect(read("wake_lock") == "")
        let begin = h.call(calls, "io.bgtaskd.App.BeginBackgroundTask", ["appId": .string(mail.rawValue)])
        let taskID = try #require(begin.first?.parameters["taskId"])
        #expect(read("wake_lock") == "bgtaskd")
        #expect(read("wake_unlock") == "")
        #expect(h.queue.sync { h.service.wakeLock?.held } == true)
        h.call(calls, "io.bgtaskd.App.EndBackgroundTask", ["appId": .string(mail.rawValue), "taskId": taskID])
        // Twenty more pairs within the linger (~50 ms): no more writes; held until the linger has passed.
        for _ in 0..<20 {
            let again = h.call(calls, "io.bgtaskd.App.BeginBackgroundTask", ["appId": .string(mail.rawValue)])
            h.call(calls, "io.bgtaskd.App.EndBackgroundTask", ["appId": .string(mail.rawValue), "taskId": try #require(again.first?.parameters["taskId"])])
        }
        #expect(h.queue.sync { h.service.wakeLock.map { [$0.writes, $0.held ? 1 : 0] } } == [1, 1])
        #expect(read("wake_unlock") == "")
        let released = ContinuousClock.now + .seconds(10)  // a correctness bound; the linger is 1 s
        while h.queue.sync(execute: { h.service.wakeLock?.held }) == true, ContinuousClock.now < released {
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(read("wake_unlock") == "bgtaskd")
        #expect(h.queue.sync { h.service.wakeLock.map { [$0.writes, $0.held ? 1 : 0] } } == [2, 0])
        // Taken again, then the daemon stops with the work live: released at once (a kernel wake lock
        // outlives the process that took it).
        _ = h.call(calls, "io.bgtaskd.App.BeginBackgroundTask", ["appId": .string(mail.rawValue)])
        #expect(h.queue.sync { h.service.wakeLock?.held } == true)
        h.queue.sync { _ = h.service.perform(.perform(.stopFinished(unexited: []), journaled: false, peer: nil), for: nil) }
        #expect(h.queue.sync { h.service.wakeLock.map { [$0.writes, $0.held ? 1 : 0] } } == [4, 0])
    }

    /// SPEC §14: logind's PrepareForSleep(true) is one `policy`/`system-sleep` decision; (false) freezes
    /// again every app the daemon holds frozen (the freezer is asked again; a frozen cgroup stays so).
    @Test func sleepIsRecordedAndResumeFreezesFrozenAppsAgain() throws {
        let h = try ServiceHarness()
        defer { h.removeStateDirectory() }
        let ctl = h.connect()
        let monitor = h.connect()
        _ = h.call(monitor, "io.bgtaskd.Manager.Monitor", more: true)
        #expect(h.call(ctl, "io.bgtaskd.Manager.Launch", ["appId": .string(mail.rawValue)]).map(\.error) == [nil])
        let pid = try #require(h.processes.first.flatMap { Int32($0.split(separator: " ").last ?? "") })
        let app = h.connect(uid: 0, pid: pid)
        _ = h.call(app, "io.bgtaskd.App.CheckIn", ["appId": .string(mail.rawValue)], more: true)
        #expect(h.call(ctl, "io.bgtaskd.Manager.Background", ["appId": .string(mail.rawValue)]).map(\.error) == [nil])
        let entered = try #require(h.lastEvent(app, "did-enter-background"))
        h.call(h.connect(uid: 0, pid: pid), "io.bgtaskd.App.Acknowledge", ["eventId": entered])
        #expect(h.processes.filter { $0 == "freeze \(mail) \(pid)" }.count == 1)

        h.queue.sync { h.service.systemSleepEvent(.preparingForSleep) }
        #expect(h.decisions(monitor).last.map { [$0.decision, $0.reason] } == ["policy", "system-sleep"])
        #expect(h.queue.sync { h.service.stats().sleepsSeen } == 1)
        h.queue.sync { h.service.systemSleepEvent(.resumed) }
        #expect(h.processes.filter { $0 == "freeze \(mail) \(pid)" }.count == 2)
        #expect(h.queue.sync { h.service.machine.app(mail, now: h.service.now())?.state } == .suspended)
    }
}

extension ServiceHarness {
    /// `app` launched by `ctl`, checked in, sent to the background, and frozen once it acknowledged
    /// `did-enter-background`: its pid and its event stream.
    func launchAndSuspend(_ app: AppID, ctl: Client) throws -> (pid: Int32, stream: Client) {
        #expect(call(ctl, "io.bgtaskd.Manager.Launch", ["appId": .string(app.rawValue)]).map(\.error) == [nil])
        let pid = try #require(processes.first.flatMap { Int32($0.split(separator: " ").last ?? "") })
        let stream = connect(uid: 0, pid: pid)
        call(stream, "io.bgtaskd.App.CheckIn", ["appId": .string(app.rawValue)], more: true)
        let calls = connect(uid: 0, pid: pid)
        #expect(call(ctl, "io.bgtaskd.Manager.Background", ["appId": .string(app.rawValue)]).map(\.error) == [nil])
        let entered = try #require(lastEvent(stream, "did-enter-background"))
        call(calls, "io.bgtaskd.App.Acknowledge", ["eventId": entered])
        #expect(processes.last == "freeze \(app) \(pid)")
        return (pid, stream)
    }
}
