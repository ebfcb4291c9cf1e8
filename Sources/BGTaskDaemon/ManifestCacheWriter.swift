import BGTaskConfig
import CSystemd
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// Writes the manifest cache for the next start on a thread of its own at the lowest priority (nice 19),
/// off the state queue and off the thread answering calls: a start that read changed manifests answers
/// its first call without waiting for the write. A write that fails leaves the old file (or none): the
/// next start reads the files themselves.
func writeManifestCacheInBackground(_ cache: ManifestCache, to path: String) {
    manifestCacheWrites.enter()
    let job = Unmanaged.passRetained(CacheWriteJob(cache: cache, path: path)).toOpaque()
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    var thread = pthread_t()
    let made = pthread_create(&thread, &attributes, { raw in
        guard let raw else { return nil }
        do {
            let job = Unmanaged<CacheWriteJob>.fromOpaque(raw).takeRetainedValue()
            // Who 0 of PRIO_PROCESS is the calling thread only, on Linux (setpriority(2), BUGS).
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
            job.cache.write(to: job.path)
        }
        // The cache and its encoded bytes are freed: back to the system, as after registering (RSS at rest).
        malloc_trim(0)
        manifestCacheWrites.leave()
        return nil
    }, job)
    if made != 0 {
        Unmanaged<CacheWriteJob>.fromOpaque(job).release()
        manifestCacheWrites.leave()
    }
}

/// Waits (at most `seconds`) for a cache write still under way: a daemon stopped right after it started
/// still leaves the cache for the next start.
func finishManifestCacheWrite(seconds: Double = 5) {
    _ = manifestCacheWrites.wait(timeout: .now() + seconds)
}

private let manifestCacheWrites = DispatchGroup()

private final class CacheWriteJob: @unchecked Sendable {
    let cache: ManifestCache
    let path: String
    init(cache: ManifestCache, path: String) {
        self.cache = cache
        self.path = path
    }
}
