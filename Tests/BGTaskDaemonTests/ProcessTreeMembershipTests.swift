import Foundation
import Testing
@testable import BGTaskDaemon

/// The lock check of an app without a cgroup (ProcLocks+Tree) asks, for each pid /proc/locks names, whether
/// it is in the app's tree, walking up its parents: the same answer as the whole table's ``ProcessTable/tree(roots:)``.
@Suite struct ProcessTreeMembershipTests {
    @Test func membershipWalkedUpFromAPidIsTheWholeTablesTree() throws {
        // A child, a subshell with a child, and a child in a session of its own (linked to the shell by its parent only).
        let shell = try ShellTree("sleep 30 & (sleep 30 & wait) & setsid sleep 30 & sleep 0.2")
        defer { shell.stop() }
        let pid = shell.pid
        let table = ProcessTable.read()
        let tree = table.tree(roots: [pid])
        #expect(tree.count == 5)  // the shell, its sleep, the subshell and its sleep, the setsid sleep
        let start = try #require(ProcessTable.entry(of: pid)).startTime
        for p in tree {
            #expect(ProcessTable.inTree(p, root: pid), "pid \(p) of the tree")
            #expect(ProcessTable.inTree(p, root: pid, rootStart: start), "pid \(p) of the tree (walk cut at older processes)")
        }
        // Processes outside it: this one, its parent, init, and one that does not exist.
        for p in [getpid(), getppid(), 1, Int32.max] {
            #expect(!ProcessTable.inTree(p, root: pid), "pid \(p) outside")
            #expect(!ProcessTable.inTree(p, root: pid, rootStart: start), "pid \(p) outside")
        }
        // The fields read from the bytes of /proc/PID/stat are those its text splits into.
        for p in tree.sorted() + [getpid()] {
            let text = try String(contentsOfFile: "/proc/\(p)/stat", encoding: .utf8)
            let close = try #require(text.lastIndex(of: ")"))
            let fields = text[text.index(after: close)...].split(separator: " ")
            let e = try #require(ProcessTable.entry(of: p))
            #expect(e.parent == Int32(fields[1]) && e.session == Int32(fields[3]) && e.startTime == UInt64(fields[19]))
        }
    }
}
