import BGTaskCore
import Dispatch
import Foundation
import Logging
import Testing
@testable import BGTaskDaemon

/// The signal freezer reports a freeze done only when every process it sent SIGSTOP is stopped (SPEC §9),
/// on real processes: a shell with eight busy children, which two CPUs cannot all stop at once.
@Suite(.serialized) struct SignalFreezerTests {
    @Test func notStoppedReadsTheStateOfEachProcess() {
        // This process is not stopped (its main thread runs or sleeps); a pid that does not exist is gone.
        #expect(SignalFreezer.notStopped([getpid()]).map(\.pid) == [getpid()])
        #expect(SignalFreezer.notStopped([getpid()]).allSatisfy { "RSD".contains($0.state) })
        #expect(SignalFreezer.notStopped([Int32.max]).isEmpty)
    }

    @Test func aFreezeIsReportedDoneOnlyOnceEveryProcessIsStoppedAndAThawLeavesNoneStopped() throws {
        let queue = DispatchQueue(label: "bgtaskd.test.signalfreezer")
        let freezer = SignalFreezer(queue: queue, logger: Logger(label: "bgtaskd-test") { _ in SwiftLogNoOpLogHandler() })
        let app = try #require(AppID("org.example.Busy"))
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        // "ready" once the shell has forked its eight children (each `&` returns after its fork).
        shell.arguments = ["-c", "for i in $(seq 8); do (while :; do :; done) & done; echo ready; wait"]
        let ready = Pipe()
        shell.standardOutput = ready
        try shell.run()
        let pid = shell.processIdentifier
        defer {
            queue.sync { freezer.kill(app: app, pid: pid) }
            shell.waitUntilExit()
        }
        let line = ready.fileHandleForReading.availableData
        #expect(String(decoding: line, as: UTF8.self) == "ready\n")
        let tree = SignalFreezer.processTree(root: pid)
        #expect(tree.count == 9)

        var early: [(cycle: Int, running: [(pid: Int32, state: Character)])] = []
        var stopped: [(cycle: Int, pids: [Int32])] = []
        // Fifty cycles: one freeze of busy processes may happen to be done at the first look, fifty not.
        for cycle in 0..<50 {
            // The freezer only says what it finds; the test looks again as the core's deadlines do
            // (DaemonCore+Freezes.swift: 0.5 ms, doubling up to 20 ms), for at most 30 s.
            var fact = queue.sync { freezer.freeze(app: app, pid: pid) }
            var delay: UInt32 = 500
            var waited: UInt32 = 0
            while fact == .notYet, waited < 30_000_000 {
                usleep(delay)
                waited += delay
                delay = min(delay * 2, 20_000)
                fact = queue.sync { freezer.checkFreeze(app: app, pid: pid, late: false) }
            }
            #expect(fact == .frozen, "the freeze was never reported done")
            var stillRunning: [(pid: Int32, state: Character)] = []
            queue.sync {
                // At the moment it is reported: nothing of the app runs.
                stillRunning = SignalFreezer.notStopped(tree)
                if !stillRunning.isEmpty { early.append((cycle, stillRunning)) }
                // SIGCONT: none is stopped once kill(2) has returned.
                freezer.thaw(app: app, pid: pid)
                let left = tree.filter { p in !SignalFreezer.notStopped([p]).contains { $0.pid == p } }
                if !left.isEmpty { stopped.append((cycle, left)) }
            }
        }
        #expect(early.isEmpty, "\(early.count) of 50 freezes reported done while processes ran: \(early.prefix(3))")
        #expect(stopped.isEmpty, "still stopped after the thaw: \(stopped.prefix(3))")
    }
}
