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
    let threshold: Int
    let quiet: DispatchTimeInterval
    /// What a burst's end does (`malloc_trim(0)` on a thread of its own; tests count it).
    let trim: @Sendable () -> Void
    private var inputs = 0
    private var seen = 0
    private(set) var armed = false

    init(threshold: Int = 4096, quiet: DispatchTimeInterval = .seconds(1),
         trim: @escaping @Sendable () -> Void = { _ = runOnBackgroundThread(nice: nil) { malloc_trim(0) } }) {
        self.threshold = threshold
        self.quiet = quiet
        self.trim = trim
    }

    /// One input taken by the core.
    func note(on queue: DispatchQueue) {
        inputs &+= 1
        guard !armed, inputs >= threshold else { return }
        armed = true
        check(on: queue)
    }

    private func check(on queue: DispatchQueue) {
        seen = inputs
        queue.asyncAfter(deadline: .now() + quiet) { [self] in
            // Inputs came within the last second: the burst goes on.
            guard inputs == seen else { return check(on: queue) }
            inputs = 0
            armed = false
            trim()
        }
    }
}
