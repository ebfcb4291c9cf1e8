#if canImport(Glibc)
import Glibc
#endif

/// `items.map(transform)` with the work spread over the online CPUs (issue 15: ten thousand manifests
/// or desktop entries are read and parsed in parallel at start-up). The order of the results is the
/// order of `items`; small inputs stay on the calling thread.
///
/// Plain threads, joined before returning, rather than `DispatchQueue.concurrentPerform`: libdispatch's
/// global (non-overcommit) pool starts its worker monitor on first use, a 1 Hz timer on its event
/// thread for the rest of the process's life, which would wake an idle daemon once a second.
public func parallelMap<Item: Sendable, T: Sendable>(_ items: [Item], minimumPerThread: Int = 64,
                                              _ transform: @escaping @Sendable (Item) -> T) -> [T] {
    let cpus = onlineCPUs()
    let workers = min(cpus, items.count / minimumPerThread)
    guard workers > 1 else { return items.map(transform) }
    let results = UnsafeMutableBufferPointer<T?>.allocate(capacity: items.count)
    results.initialize(repeating: nil)
    defer { results.deallocate() }
    // Each index is written by exactly one chunk, and read after every thread was joined.
    nonisolated(unsafe) let slots = results
    let chunk = (items.count + workers - 1) / workers
    let run: @Sendable (Int) -> Void = { w in
        var i = w * chunk
        let end = min(items.count, (w + 1) * chunk)
        while i < end {
            slots[i] = transform(items[i])
            i += 1
        }
    }
    // Chunks 1... on threads of their own, chunk 0 here; a thread that cannot be made runs its chunk here.
    var threads: [pthread_t] = []
    for w in 1..<workers {
        let box = Unmanaged.passRetained(ChunkJob { run(w) }).toOpaque()
        var tid = pthread_t()
        if pthread_create(&tid, nil, { raw in
            guard let raw else { return nil }
            Unmanaged<ChunkJob>.fromOpaque(raw).takeRetainedValue().body()
            return nil
        }, box) == 0 {
            threads.append(tid)
        } else {
            Unmanaged<ChunkJob>.fromOpaque(box).release()
            run(w)
        }
    }
    run(0)
    for tid in threads { pthread_join(tid, nil) }
    // Moved out, not copied: a copy retained each result once more, and `deallocate` never released them.
    return [T](unsafeUninitializedCapacity: items.count) { buffer, count in
        guard let to = buffer.baseAddress, let from = results.baseAddress else { return }
        for i in 0..<items.count {
            guard let value = (from + i).move() else { continue }
            (to + count).initialize(to: value)
            count += 1
        }
    }
}

/// The CPUs online (at least 1): how many threads `parallelMap` spreads work over.
public func onlineCPUs() -> Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

private final class ChunkJob: @unchecked Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}
