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
    let job = CacheWriteJob(cache: cache, path: path)
    let started = runOnBackgroundThread {
        job.cache.write(to: job.path)
        // The cache and its encoded bytes are freed: back to the system, as after registering (RSS at rest).
        malloc_trim(0)
        manifestCacheWrites.leave()
    }
    if !started { manifestCacheWrites.leave() }
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
