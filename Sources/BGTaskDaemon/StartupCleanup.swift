import BGTaskVarlink
import CSystemd
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// What start-up leaves behind, given back once the first answer is out: the heap that reading and
/// registering the manifests freed (`malloc_trim`, RSS at rest) and the code pages only start-up ran
/// (`StartupPages`). Done before the first call, both were on the first answer's path: reading
/// /proc/self/smaps competes for a CPU, the code the answer runs was faulted in again, and the reply was
/// built in fresh pages instead of the heap just freed (performance.md, the first answer). So they run on
/// a background thread (nice 19), `delay` seconds after the first turn that served a call and left no
/// reply bytes waiting (the client reads the last of them meanwhile), or `fallback` seconds after
/// registration when no call came. On `queue`.
final class StartupCleanup: @unchecked Sendable {
    private var done = false

    /// Arms the clean-up on `server`'s turns (chained after its `afterTurn`) and a fallback timer.
    func arm(server: VarlinkServer, queue: DispatchQueue, delay: Double = 0.1, fallback: Double = 1) {
        let afterTurn = server.afterTurn
        server.afterTurn = { [weak self, unowned server] in
            afterTurn?()
            guard let self, !self.done, server.callCount > 0, server.bufferedReplyBytes == 0 else { return }
            server.afterTurn = afterTurn
            queue.asyncAfter(deadline: .now() + delay) { self.run() }
        }
        queue.asyncAfter(deadline: .now() + fallback) { [self] in run() }
    }

    private func run() {
        guard !done else { return }
        done = true
        runOnBackgroundThread {
            malloc_trim(0)
            StartupPages.release()
        }
    }
}
