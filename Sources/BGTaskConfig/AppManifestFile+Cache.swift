#if canImport(Glibc)
import Glibc
#endif

extension AppManifestFile {
    /// What `loadAll(appsDirectory:cache:now:)` found.
    public struct CachedLoad: Sendable {
        public var manifests: [AppManifestFile]
        public var errors: [ConfigError]
        public var warnings: [ConfigWarning]
        /// Manifests taken from the cache, their files unchanged.
        public var fromCache: Int
        /// The directory was listed (false: its listing came from the cache, the directory unchanged).
        public var listed = true
        /// The cache to write for the next start; nil when the one given is still exact.
        public var updatedCache: ManifestCache?
    }

    /// `loadAll(appsDirectory:)` with a cache of an earlier start: the same manifests, errors and warnings,
    /// in the same order. A file whose stamp (`FileStamp`: one `fstatat`) equals the one kept with its
    /// manifest is not read; every other file is read and parsed as `loadAll` does. While the directory's
    /// own stamp is the one kept with the cache's listing, the directory is not listed again. `now`: the
    /// wall clock in ns since the epoch, before any file is looked at (a file or directory changed within
    /// `ManifestCache.settleNanoseconds` of it is looked at again next time, not kept).
    public static func loadAll(appsDirectory: String, cache: ManifestCache?, now: Int64) -> CachedLoad {
        let directory = open(appsDirectory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { if directory >= 0 { close(directory) } }
        // The directory's stamp before it is listed: an entry added, removed or renamed after this
        // changes the directory's mtime and ctime, so a listing kept with this stamp is never stale.
        var st = stat()
        let directoryStamp = directory >= 0 && fstat(directory, &st) == 0 ? FileStamp(st) : nil
        var cache = cache
        if let c = cache, c.appsDirectory != appsDirectory { cache = nil }
        let names: [String]
        // For each name, the index of its entry in the cache, when there may be one.
        let cachedIndex: @Sendable (Int, String) -> Int?
        var listed = true
        if let c = cache, let kept = c.directoryStamp, kept == directoryStamp {
            names = c.names
            cachedIndex = { i, _ in i }
            listed = false
        } else {
            switch listDirectoryNames(appsDirectory, suffix: fileExtension) {
            case .success(let list): names = list
            case .failure(let error):
                return CachedLoad(manifests: [], errors: [error], warnings: [], fromCache: 0, updatedCache: nil)
            }
            var index: [String: Int] = [:]
            if let c = cache {
                index.reserveCapacity(c.names.count)
                for (i, name) in c.names.enumerated() where c.stamps[i] != nil { index[name] = i }
            }
            cachedIndex = { [index] _, name in index[name] }
        }
        let stamps = cache?.stamps ?? []
        // In as many parts as there are CPUs, each on a thread of its own.
        let partCount = max(1, min(onlineCPUs(), names.count / 256))
        let size = (names.count + partCount - 1) / partCount
        let parts = (0..<partCount).map { k in min(names.count, k * size)..<min(names.count, (k + 1) * size) }
        let pieces = parallelMap(parts, minimumPerThread: 1) { range -> [CachedOutcome] in
            var out: [CachedOutcome] = []
            out.reserveCapacity(range.count)
            for i in range {
                let name = names[i]
                var st = stat()
                guard directory >= 0, fstatat(directory, name, &st, 0) == 0 else {
                    // Gone since the listing, or not to be looked at: read as `loadAll` would.
                    out.append(read(joinPath(appsDirectory, name), stamp: nil))
                    continue
                }
                // A link that leads to a directory is no manifest (`listDirectory` leaves it out).
                if (st.st_mode & S_IFMT) == S_IFDIR {
                    out.append(.missing)
                    continue
                }
                let stamp = FileStamp(st)
                if let k = cachedIndex(i, name), stamps[k] == stamp {
                    out.append(.cached(k))
                } else {
                    out.append(read(joinPath(appsDirectory, name), stamp: stamp))
                }
            }
            return out
        }
        var outcomes: [CachedOutcome]
        if pieces.count == 1 {
            outcomes = pieces[0]
        } else {
            outcomes = []
            outcomes.reserveCapacity(names.count)
            for piece in pieces { outcomes += piece }
        }
        let hadCache = cache != nil
        let keptBefore = cache?.count ?? 0
        let settledDirectory = directoryStamp.flatMap { $0.ctime < now - ManifestCache.settleNanoseconds ? $0 : nil }
        var load = CachedLoad(manifests: [], errors: [], warnings: [], fromCache: 0, updatedCache: nil)
        load.listed = listed
        var changed = !hadCache || settledDirectory != cache?.directoryStamp || names != cache?.names
        for outcome in outcomes {
            switch outcome {
            case .missing, .failed:
                continue
            case .cached:
                load.fromCache += 1
            case .parsed(let manifest, let e, let w, let stamp):
                if isKept(manifest, e, w, stamp, now: now) { changed = true }
            }
        }
        // Unchanged: nothing new to keep, every entry of the cache was used (none stale or gone), and the
        // listing and the directory's stamp are the ones kept.
        if changed || load.fromCache != keptBefore {
            var newStamps: [FileStamp?] = [], newManifests: [AppManifestFile?] = []
            newStamps.reserveCapacity(names.count)
            newManifests.reserveCapacity(names.count)
            for outcome in outcomes {
                switch outcome {
                case .cached(let k):
                    newStamps.append(stamps[k])
                    newManifests.append(cache?.manifests[k])
                case .parsed(let manifest?, let e, let w, let stamp?) where isKept(manifest, e, w, stamp, now: now):
                    newStamps.append(stamp)
                    newManifests.append(manifest)
                default:
                    newStamps.append(nil)
                    newManifests.append(nil)
                }
            }
            load.updatedCache = ManifestCache(appsDirectory: appsDirectory, directoryStamp: settledDirectory, names: names,
                                              stamps: newStamps, manifests: newManifests)
        }
        // Each outcome moved out (a trivial one left in its place): its manifest goes into the result
        // without a copy of its strings and arrays retained, and released with the outcomes.
        load.manifests.reserveCapacity(outcomes.count)
        outcomes.withUnsafeMutableBufferPointer { buffer in
            for i in buffer.indices {
                let outcome = buffer.moveElement(from: i)
                buffer.initializeElement(at: i, to: .missing)
                switch consume outcome {
                case .missing:
                    continue
                case .failed(let error):
                    load.errors.append(error)
                case .cached(let k):
                    var manifest: AppManifestFile?
                    swap(&manifest, &cache!.manifests[k])
                    if let manifest { load.manifests.append(manifest) }
                case .parsed(let manifest, let e, let w, _):
                    load.errors += e
                    load.warnings += w
                    if let manifest { load.manifests.append(manifest) }
                }
            }
        }
        return load
    }

    /// `loadAll(appsDirectory:cache:now:)` with the cache `readCache` reads.
    public static func loadAll(
        appsDirectory: String, readCache: @escaping @Sendable () -> ManifestCache?, now: Int64
    ) -> CachedLoad {
        loadAll(appsDirectory: appsDirectory, cache: readCache(), now: now)
    }

    /// The file at `path` read and parsed, as `loadAll` does.
    private static func read(_ path: String, stamp: FileStamp?) -> CachedOutcome {
        switch readTextFile(path) {
        case .missing: return .missing
        case .failed(let kind): return .failed(ConfigError(kind, at: SourceLocation(file: path, line: 0)))
        case .text(let text):
            let result = parse(text, path: path)
            return .parsed(result.manifest, result.errors, result.warnings, stamp)
        }
    }

    /// A manifest read without an error or a warning, from a file not changed within
    /// `ManifestCache.settleNanoseconds` of `now`.
    private static func isKept(_ manifest: AppManifestFile?, _ errors: [ConfigError], _ warnings: [ConfigWarning],
                               _ stamp: FileStamp?, now: Int64) -> Bool {
        guard manifest != nil, errors.isEmpty, warnings.isEmpty, let stamp else { return false }
        return stamp.ctime < now - ManifestCache.settleNanoseconds
    }

    private enum CachedOutcome: Sendable {
        case missing
        case failed(ConfigError)
        /// The name's index in the cache.
        case cached(Int)
        // Boxed: most outcomes are `cached`, and an unboxed one took the room of a whole manifest.
        indirect case parsed(AppManifestFile?, [ConfigError], [ConfigWarning], FileStamp?)
    }
}
