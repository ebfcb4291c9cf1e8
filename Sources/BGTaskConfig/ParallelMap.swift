import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// `items.map(transform)` with the work spread over the online CPUs (issue 15: ten thousand manifests
/// or desktop entries are read and parsed in parallel at start-up). The order of the results is the
/// order of `items`; small inputs stay on the calling thread.
func parallelMap<Item: Sendable, T: Sendable>(_ items: [Item], minimumPerThread: Int = 64, _ transform: @Sendable (Item) -> T) -> [T] {
    let cpus = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    let workers = min(cpus, items.count / minimumPerThread)
    guard workers > 1 else { return items.map(transform) }
    let results = UnsafeMutableBufferPointer<T?>.allocate(capacity: items.count)
    results.initialize(repeating: nil)
    defer { results.deallocate() }
    // Each index is written by exactly one iteration, and read after concurrentPerform returned.
    nonisolated(unsafe) let slots = results
    let chunk = (items.count + workers - 1) / workers
    DispatchQueue.concurrentPerform(iterations: workers) { w in
        let end = min(items.count, (w + 1) * chunk)
        var i = w * chunk
        while i < end {
            slots[i] = transform(items[i])
            i += 1
        }
    }
    return results.map { $0! }
}
