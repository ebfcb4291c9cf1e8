import CSystemd
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// Gives the heap a burst of inputs freed back to the system once the daemon is at rest after it
/// (`malloc_trim`, off the queue): the buffers the core's tables, the connections and the replies grew
/// through and left behind stay in malloc's heap otherwise (performance.md, row 4: 10,000 apps and
/// 100,000 assertions, 51.6 → 42.1 MiB at rest without the recording). Only after `threshold` inputs, so
/// a few calls (a tap after a pause) find their heap pages still there; checked once a second while the
/// burst goes on (no timer per input), nothing armed at rest. On the daemon's queue.
final class BurstTrim: @unchecked Sendable {
    // @unchecked: only touched on the daemon's serial queue.
    static let threshold = 4096
    static let quiet: DispatchTimeInterval = .seconds(1)
    private var inputs = 0
    private var seen = 0
    private var armed = false

    /// One input taken by the core.
    func note(on queue: DispatchQueue) {
        inputs &+= 1
        guard !armed, inputs >= Self.threshold else { return }
        armed = true
        check(on: queue)
    }

    private func check(on queue: DispatchQueue) {
        seen = inputs
        queue.asyncAfter(deadline: .now() + Self.quiet) { [self] in
            // Inputs came within the last second: the burst goes on.
            guard inputs == seen else { return check(on: queue) }
            inputs = 0
            armed = false
            _ = runOnBackgroundThread(nice: nil) { malloc_trim(0) }
        }
    }
}
