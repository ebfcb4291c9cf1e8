import Foundation
import Testing
@testable import BGTaskDaemon

/// The energy meter of an app without a cgroup walks the app's own processes (`/proc/PID/task/*/children`)
/// instead of reading every process on the machine: the same processes, found without the whole table.
@Suite struct ProcessChildrenTests {
    @Test func theDescendantsOfAShellAreItsChildrenAndGrandchildrenAsTheTableFindsThem() throws {
        // Three children (two sleeps, a subshell), the subshell with a child of its own; "ready" once all four are forked.
        let shell = try ShellTree("sleep 30 & sleep 30 & (sleep 30 & wait) & sleep 0.2")
        defer { shell.stop() }
        let pid = shell.pid
        let walked = try #require(ProcessTable.descendants(of: pid), "this kernel lists /proc/PID/task/TID/children")
        let table = ProcessTable.read().tree(roots: [pid]).sorted()
        #expect(walked.count == 5)  // the shell, its two sleeps, the subshell and its sleep
        #expect(walked == table)
        #expect(ProcessTable.descendants(of: Int32.max) == nil)
    }
}
