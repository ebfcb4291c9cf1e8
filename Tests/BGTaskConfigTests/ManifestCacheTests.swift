import BGTaskConfig
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The manifest cache of the state directory (`ManifestCache`, `AppManifestFile.loadAll(appsDirectory:cache:now:)`).
@Suite("Manifest cache")
struct ManifestCacheTests {
    /// Late enough that every file written by a test counts as settled.
    private var later: Int64 { Int64(Date().timeIntervalSince1970 * 1e9) + 100_000_000_000 }

    private func cached(_ apps: String, _ cachePath: String, now: Int64) -> AppManifestFile.CachedLoad {
        AppManifestFile.loadAll(appsDirectory: apps, readCache: { ManifestCache.read(path: cachePath, appsDirectory: apps) }, now: now)
    }

    @Test func unchangedManifestsComeFromTheCacheAsTheyWereRead() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let apps = directory.path + "/apps.d"
        let cachePath = directory.path + "/manifest-cache"
        try directory.write("apps.d/org.example.A.app", """
            [App]
            Name=Alpha
            Exec=/usr/bin/alpha --flag "two words"
            User=nobody
            WorkingDirectory=~
            Environment=A=1 B=two
            BackgroundModes=audio fetch
            PermittedTaskIdentifiers=org.example.A.refresh
            BackgroundAppRefresh=off
            RefreshRestricted=yes
            LifecycleAware=no

            """)
        try directory.write("apps.d/org.example.B.app", "[App]\nExec=b\nUser=1234\n")
        let first = AppManifestFile.loadAll(appsDirectory: apps, cache: nil, now: later)
        #expect(first.fromCache == 0)
        let update = try #require(first.updatedCache)
        #expect(update.count == 2)
        #expect(update.write(to: cachePath))

        let second = cached(apps, cachePath, now: later)
        #expect(second.fromCache == 2)
        #expect(!second.listed)  // the directory unchanged: its listing from the cache
        #expect(second.updatedCache == nil)  // still exact: nothing to write
        #expect(second.manifests == AppManifestFile.loadAll(appsDirectory: apps).manifests)
        #expect(second.manifests == first.manifests)
    }

    /// An edit that keeps the size and puts the mtime back is still seen: the ctime changed.
    @Test func anEditedManifestIsReadAgainEvenWithItsSizeAndMtimeKept() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let apps = directory.path + "/apps.d"
        let cachePath = directory.path + "/manifest-cache"
        let file = try directory.write("apps.d/org.example.A.app", "[App]\nName=One\nExec=/bin/true\n")
        try directory.write("apps.d/org.example.B.app", "[App]\nExec=/bin/true\n")
        #expect(try #require(AppManifestFile.loadAll(appsDirectory: apps, cache: nil, now: later).updatedCache).write(to: cachePath))
        var before = stat()
        #expect(stat(file, &before) == 0)

        try directory.write("apps.d/org.example.A.app", "[App]\nName=Two\nExec=/bin/true\n")
        var times = [before.st_atim, before.st_mtim]
        #expect(utimensat(AT_FDCWD, file, &times, 0) == 0)
        var after = stat()
        #expect(stat(file, &after) == 0)
        #expect(after.st_size == before.st_size)
        #expect(after.st_mtim.tv_sec == before.st_mtim.tv_sec && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec)

        let load = cached(apps, cachePath, now: later)
        #expect(load.manifests.map(\.name) == ["Two", "org.example.B"])
        #expect(load.fromCache == 1)
        #expect(load.updatedCache?.count == 2)
    }

    @Test func aRemovedOrReplacedManifestIsNotServed() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let apps = directory.path + "/apps.d"
        let cachePath = directory.path + "/manifest-cache"
        try directory.write("apps.d/org.example.A.app", "[App]\nExec=/bin/true\n")
        try directory.write("apps.d/org.example.B.app", "[App]\nName=Old\nExec=/bin/true\n")
        #expect(try #require(AppManifestFile.loadAll(appsDirectory: apps, cache: nil, now: later).updatedCache).write(to: cachePath))
        #expect(unlink(apps + "/org.example.A.app") == 0)
        try directory.write("new.app", "[App]\nName=New\nExec=/bin/true\n")
        #expect(rename(directory.path + "/new.app", apps + "/org.example.B.app") == 0)
        let load = cached(apps, cachePath, now: later)
        #expect(load.manifests.map(\.name) == ["New"])
        #expect(load.fromCache == 0)
        #expect(load.updatedCache?.count == 1)
    }

    /// A bad manifest is never kept: every start reads it and names file, line and key.
    @Test func aBadManifestIsReportedOnEveryStart() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let apps = directory.path + "/apps.d"
        let cachePath = directory.path + "/manifest-cache"
        try directory.write("apps.d/org.example.Good.app", "[App]\nExec=/bin/true\n")
        let bad = try directory.write("apps.d/org.example.Bad.app", "[App]\nExec=/bin/true\nLifecycleAware=perhaps\n")
        let first = AppManifestFile.loadAll(appsDirectory: apps, cache: nil, now: later)
        #expect(try #require(first.updatedCache).write(to: cachePath))
        let second = cached(apps, cachePath, now: later)
        for load in [first, second] {
            #expect(load.manifests.map(\.id) == ["org.example.Good"])
            #expect(load.errors.map(\.description) == [#"\#(bad):3: LifecycleAware: invalid boolean "perhaps""#])
        }
        #expect(second.fromCache == 1)
    }

    /// A file changed within the settling time of the load is read again next time, not kept.
    @Test func aJustWrittenManifestIsNotKept() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let apps = directory.path + "/apps.d"
        try directory.write("apps.d/org.example.A.app", "[App]\nExec=/bin/true\n")
        let now = Int64(Date().timeIntervalSince1970 * 1e9)
        let load = AppManifestFile.loadAll(appsDirectory: apps, cache: nil, now: now)
        #expect(load.manifests.count == 1)
        #expect(load.updatedCache?.count == 0)
    }

    /// Truncated, corrupt, of another apps directory, or not a cache at all: no cache.
    @Test func aDamagedCacheIsIgnored() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let apps = directory.path + "/apps.d"
        let cachePath = directory.path + "/manifest-cache"
        try directory.write("apps.d/org.example.A.app", "[App]\nName=Alpha\nExec=/bin/true\n")
        #expect(try #require(AppManifestFile.loadAll(appsDirectory: apps, cache: nil, now: later).updatedCache).write(to: cachePath))
        let good = try Data(contentsOf: URL(fileURLWithPath: cachePath))
        #expect(ManifestCache.read(path: cachePath, appsDirectory: apps)?.count == 1)
        #expect(ManifestCache.read(path: cachePath, appsDirectory: directory.path + "/other.d") == nil)

        var damaged: [Data] = [good.prefix(good.count - 1), good.prefix(good.count / 2), Data(), Data("[App]\n".utf8)]
        for offset in [0, 8, good.count / 2, good.count - 1] {
            var flipped = good
            flipped[offset] ^= 0x20
            damaged.append(flipped)
        }
        for bytes in damaged {
            try bytes.write(to: URL(fileURLWithPath: cachePath))
            #expect(ManifestCache.read(path: cachePath, appsDirectory: apps) == nil)
            let load = cached(apps, cachePath, now: later)
            #expect(load.manifests.map(\.name) == ["Alpha"])
            #expect(load.fromCache == 0)
            #expect(load.updatedCache?.count == 1)  // written anew
        }
    }

    /// The directory's listing comes from the cache while the directory is unchanged; a manifest added
    /// (written and renamed in, as a package manager does), removed, or edited in place is still seen.
    @Test func theListingIsKeptUntilTheDirectoryChanges() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let apps = directory.path + "/apps.d"
        let cachePath = directory.path + "/manifest-cache"
        try directory.write("apps.d/org.example.A.app", "[App]\nName=A\nExec=/bin/true\n")
        try directory.write("apps.d/org.example.B.app", "[App]\nName=B\nExec=/bin/true\n")
        try directory.write("apps.d/org.example.Bad.app", "[App]\nExec=/bin/true\nLifecycleAware=perhaps\n")
        var load = AppManifestFile.loadAll(appsDirectory: apps, cache: nil, now: later)
        #expect(load.listed)
        #expect(try #require(load.updatedCache).write(to: cachePath))

        // Unchanged: not listed, every good manifest from the cache, the bad one read and reported again.
        load = cached(apps, cachePath, now: later)
        #expect(!load.listed)
        #expect(load.fromCache == 2)
        #expect(load.manifests.map(\.name) == ["A", "B"])
        #expect(load.errors.count == 1)
        #expect(load.updatedCache == nil)

        // Edited in place: the directory is unchanged (not listed), the file's own stamp is not.
        try directory.write("apps.d/org.example.A.app", "[App]\nName=A2\nExec=/bin/true\n")
        load = cached(apps, cachePath, now: later)
        #expect(!load.listed)
        #expect(load.manifests.map(\.name) == ["A2", "B"])
        #expect(load.fromCache == 1)
        #expect(try #require(load.updatedCache).write(to: cachePath))

        // Added by a rename into the directory: listed again, the new manifest served, the rest cached.
        try directory.write("staged", "[App]\nName=C\nExec=/bin/true\n")
        #expect(rename(directory.path + "/staged", apps + "/org.example.C.app") == 0)
        load = cached(apps, cachePath, now: later)
        #expect(load.listed)
        #expect(load.manifests.map(\.name) == ["A2", "B", "C"])
        #expect(load.fromCache == 2)
        #expect(load.manifests == AppManifestFile.loadAll(appsDirectory: apps).manifests)
        #expect(try #require(load.updatedCache).write(to: cachePath))
        #expect(!cached(apps, cachePath, now: later).listed)

        // Removed: listed again, not served.
        #expect(unlink(apps + "/org.example.B.app") == 0)
        load = cached(apps, cachePath, now: later)
        #expect(load.listed)
        #expect(load.manifests.map(\.name) == ["A2", "C"])
        #expect(load.fromCache == 2)
    }

    /// A directory changed within the settling time of the load is listed again next time: a second
    /// change within one tick of the file system's clock could leave its stamp as it was.
    @Test func aJustChangedDirectoryIsListedAgain() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let apps = directory.path + "/apps.d"
        let cachePath = directory.path + "/manifest-cache"
        try directory.write("apps.d/org.example.A.app", "[App]\nExec=/bin/true\n")
        // `now` within the settling time of the directory's last change.
        var st = stat()
        #expect(stat(apps, &st) == 0)
        let directoryChanged = Int64(st.st_ctim.tv_sec) * 1_000_000_000 + Int64(st.st_ctim.tv_nsec)
        let now = directoryChanged + 1_000_000_000
        let first = AppManifestFile.loadAll(appsDirectory: apps, cache: nil, now: now)
        #expect(try #require(first.updatedCache).write(to: cachePath))
        let second = cached(apps, cachePath, now: later)
        #expect(second.listed)
        #expect(second.updatedCache != nil)  // now with the settled directory's stamp
        #expect(try #require(second.updatedCache).write(to: cachePath))
        #expect(!cached(apps, cachePath, now: later).listed)
    }

    /// Many manifests: the cache's parts (checked and decoded in parallel) give back every one, in order.
    @Test func aLargeDirectoryRoundTripsThroughTheCache() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let apps = directory.path + "/apps.d"
        let cachePath = directory.path + "/manifest-cache"
        for i in 0..<3000 {
            try directory.write("apps.d/org.example.N\(i).app", "[App]\nName=N\(i)\nExec=/bin/n \(i)\nEnvironment=K=\(i)\n")
        }
        let first = AppManifestFile.loadAll(appsDirectory: apps, cache: nil, now: later)
        #expect(try #require(first.updatedCache).write(to: cachePath))
        let read = try #require(ManifestCache.read(path: cachePath, appsDirectory: apps))
        #expect(read.count == 3000)
        let second = cached(apps, cachePath, now: later)
        #expect(second.fromCache == 3000)
        #expect(!second.listed)
        #expect(second.manifests == first.manifests)
        #expect(second.manifests.map(\.path) == first.manifests.map(\.path))
    }
}
