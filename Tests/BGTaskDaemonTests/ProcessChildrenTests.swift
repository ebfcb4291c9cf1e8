import Foundation
import Testing
@testable import BGTaskDaemon

/// The energy meter of an app without a cgroup walks the app's own processes (`/proc/PID/task/*/children`)
/// instead of reading every process on the machine: the same processes, found without the whole table.
@Suite struct ProcessChildrenTests {
    @Test func theDescendantsOfAShellAreItsChildrenAndGrandchildrenAsTheTableFindsThem() throws {
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        // Three children (two sleeps, a subshell), the subshell with a child of its own; "ready" once all four are forked.
        shell.arguments = ["-c", "sleep 30 & sleep 30 & (sleep 30 & wait) & sleep 0.2; echo ready; wait"]
        let ready = Pipe()
        shell.standardOutput = ready
        try shell.run()
        let pid = shell.processIdentifier
        defer {
            for p in ProcessTable.read().tree(roots: [pid]) where p != pid { kill(p, SIGKILL) }
            kill(pid, SIGKILL)
            shell.waitUntilExit()
        }
        #expect(String(decoding: ready.fileHandleForReading.availableData, as: UTF8.self) == "ready\n")
        let walked = try #require(ProcessTable.descendants(of: pid), "this kernel lists /proc/PID/task/TID/children")
        let table = ProcessTable.read().tree(roots: [pid]).sorted()
        #expect(walked.count == 5)  // the shell, its two sleeps, the subshell and its sleep
        #expect(walked == table)
        #expect(ProcessTable.descendants(of: Int32.max) == nil)
    }
}
