import Foundation
@testable import BGTaskDaemon

/// A real process tree for the process-table tests: `/bin/sh -c script`, where the script forks what it
/// wants, then prints "ready" and waits. `stop()` kills the whole tree.
struct ShellTree {
    struct NotReady: Error { var output: String }

    let shell = Process()
    var pid: Int32 { shell.processIdentifier }

    /// Starts `script` and returns once it said "ready" (its processes are forked).
    init(_ script: String) throws {
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = ["-c", script + "; echo ready; wait"]
        let ready = Pipe()
        shell.standardOutput = ready
        try shell.run()
        let said = String(decoding: ready.fileHandleForReading.availableData, as: UTF8.self)
        guard said == "ready\n" else {
            stop()
            throw NotReady(output: said)
        }
    }

    /// Kills the shell and every process under it.
    func stop() {
        for p in ProcessTable.read().tree(roots: [pid]) where p != pid { kill(p, SIGKILL) }
        kill(pid, SIGKILL)
        shell.waitUntilExit()
    }
}
