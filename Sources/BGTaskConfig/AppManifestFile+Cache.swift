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
        /// The cache to write for the next start; nil when the one given is still exact.
        public var updatedCache: ManifestCache?
    }

    /// `loadAll(appsDirectory:)` with a cache of an earlier start: the same manifests, errors and warnings,
    /// in the same order. A file whose stamp (`FileStamp`: one `fstatat`) equals the one kept with its
    /// manifest is not read; every other file is read and parsed as `loadAll` does. `now`: the wall clock
    /// in ns since the epoch, before any file is looked at (a file changed within
    /// `ManifestCache.settleNanoseconds` of it is not kept for next time).
    public static func loadAll(appsDirectory: String, cache: ManifestCache?, now: Int64) -> CachedLoad {
        loadAll(appsDirectory: appsDirectory, listing: listDirectory(appsDirectory, suffix: fileExtension), cache: cache, now: now)
    }

    /// `loadAll(appsDirectory:cache:now:)` with the cache read by `readCache` on a thread of its own while
    /// this one lists the directory (start-up: with 10,000 manifests each takes ~8 ms, performance.md).
    public static func loadAll(
        appsDirectory: String, readCache: @escaping @Sendable () -> ManifestCache?, now: Int64
    ) -> CachedLoad {
        let (listing, cache) = concurrently({ listDirectory(appsDirectory, suffix: fileExtension) }, readCache)
        return loadAll(appsDirectory: appsDirectory, listing: listing, cache: cache, now: now)
    }

    private static func loadAll(
        appsDirectory: String, listing: Result<[String], ConfigError>, cache: consuming ManifestCache?, now: Int64
    ) -> CachedLoad {
        let paths: [String]
        switch listing {
        case .success(let list): paths = list
        case .failure(let error):
            return CachedLoad(manifests: [], errors: [error], warnings: [], fromCache: 0, updatedCache: nil)
        }
        let directory = open(appsDirectory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { if directory >= 0 { close(directory) } }
        // The cache's table held here alone (the cache consumed), so that its entries can be moved out.
        let hadCache = cache != nil
        var known: [String: ManifestCache.Entry] = [:]
        if let c = consume cache, c.appsDirectory == appsDirectory { known = c.entries }
        // A hit is the entry's place in the table: its manifest is moved out of it below, not copied
        // here with every string and array retained (and released with the table).
        var outcomes = parallelMap(paths) { [known] path -> CachedOutcome in
            let stamp = FileStamp.of(path, in: directory)
            if let stamp, let index = known.index(forKey: path), known.values[index].stamp == stamp {
                return .cached(index)
            }
            switch readTextFile(path) {
            case .missing: return .missing
            case .failed(let kind): return .failed(ConfigError(kind, at: SourceLocation(file: path, line: 0)))
            case .text(let text):
                let result = parse(text, path: path)
                return .parsed(result.manifest, result.errors, result.warnings, stamp)
            }
        }
        var load = CachedLoad(manifests: [], errors: [], warnings: [], fromCache: 0, updatedCache: nil)
        var changed = !hadCache
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
        // Unchanged: nothing new to keep, and every entry of the cache was used (none stale or gone).
        if changed || load.fromCache != known.count {
            var kept: [String: ManifestCache.Entry] = [:]
            kept.reserveCapacity(outcomes.count)
            for outcome in outcomes {
                switch outcome {
                case .cached(let index):
                    let entry = known.values[index]
                    kept[entry.manifest.path] = entry
                case .parsed(let manifest?, let e, let w, let stamp?) where isKept(manifest, e, w, stamp, now: now):
                    kept[manifest.path] = ManifestCache.Entry(stamp: stamp, manifest: manifest)
                default:
                    continue
                }
            }
            load.updatedCache = ManifestCache(appsDirectory: appsDirectory, entries: kept)
        }
        // Each outcome moved out (a trivial one left in its place): its manifest goes into the result
        // without a copy of its strings and arrays retained, and released with the outcomes.
        load.manifests.reserveCapacity(outcomes.count)
        let vacant = ManifestCache.Entry(
            stamp: FileStamp(device: 0, inode: 0, size: 0, mtime: 0, ctime: 0), manifest: AppManifestFile(id: "", exec: []))
        outcomes.withUnsafeMutableBufferPointer { buffer in
            for i in buffer.indices {
                let outcome = buffer.moveElement(from: i)
                buffer.initializeElement(at: i, to: .missing)
                switch consume outcome {
                case .missing:
                    continue
                case .failed(let error):
                    load.errors.append(error)
                case .cached(let index):
                    var entry = vacant
                    swap(&entry, &known.values[index])
                    load.manifests.append((consume entry).manifest)
                case .parsed(let manifest, let e, let w, _):
                    load.errors += e
                    load.warnings += w
                    if let manifest { load.manifests.append(manifest) }
                }
            }
        }
        return load
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
        case cached(Dictionary<String, ManifestCache.Entry>.Index)
        case parsed(AppManifestFile?, [ConfigError], [ConfigWarning], FileStamp?)
    }
}
