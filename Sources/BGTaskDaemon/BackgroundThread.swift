#if canImport(Glibc)
import Glibc
#endif

/// Runs `body` once on a detached thread of its own, by default at the lowest priority (`nice` 19; nil:
/// the daemon's own): start-up's leftovers (the manifest cache's write, releasing start-up's code pages),
/// a reload's reading of the files, without a libdispatch worker — a global queue's pool, once used, keeps libdispatch's event thread waking every second to
/// watch it, which an idle daemon must not (SPEC §16). False if no thread could be made (nothing ran).
@discardableResult
func runOnBackgroundThread(nice: Int32? = 19, _ body: @escaping @Sendable () -> Void) -> Bool {
    final class Job: @unchecked Sendable {
        let body: @Sendable () -> Void
        let nice: Int32?
        init(_ body: @escaping @Sendable () -> Void, nice: Int32?) {
            self.body = body
            self.nice = nice
        }
    }
    let job = Unmanaged.passRetained(Job(body, nice: nice)).toOpaque()
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    var thread = pthread_t()
    let made = pthread_create(&thread, &attributes, { raw in
        guard let raw else { return nil }
        let job = Unmanaged<Job>.fromOpaque(raw).takeRetainedValue()
        // Who 0 of PRIO_PROCESS is the calling thread only, on Linux (setpriority(2), BUGS).
        if let nice = job.nice { _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, nice) }
        job.body()
        return nil
    }, job)
    if made != 0 {
        Unmanaged<Job>.fromOpaque(job).release()
        return false
    }
    return true
}
