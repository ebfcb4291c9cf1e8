import BGTaskConfig
import BGTaskCore
import Logging

#if canImport(Glibc)
import Glibc
#endif

// SPEC §15: snapshots live until the app terminates. A run that ended without terminating its apps
// (a crash, kill -9) leaves their files; at start-up the core says which belong to no running app.
extension DaemonService {
    /// At start-up, once the apps still running are adopted again: removes the snapshot directories (and
    /// anything else) in `<runtime>/snapshots/` of apps not running, and takes back the snapshots of the
    /// others, shown again once their scene is reported again under the same ID.
    func removeStaleSnapshots() {
        let parent = options.runtimeDir + "/snapshots"
        let names = Self.directoryEntries(parent)
        guard !names.isEmpty else { return }
        let stale = machine.staleSnapshotDirectories(names)
        for name in stale {
            Self.removeEntry(parent + "/" + name)
            logger.info("removed the snapshots of \(name) left by a previous run: it is not running")
        }
        let staleSet = Set(stale)
        for name in names where !staleSet.contains(name) {
            guard let app = AppID(name) else { continue }
            for file in Self.directoryEntries(snapshotDirectory(app)) where file.hasSuffix(".png") {
                guard let scene = SceneID(String(file.dropLast(4))),
                    case .kept(let realtimeUSec) = Self.inspectSnapshot(snapshotPath(app, scene), maxBytes: config.daemon.snapshotMaxBytes)
                else { continue }
                snapshotFiles[app, default: [:]][scene] = realtimeUSec
            }
        }
    }

    /// An adopted instance of `app` vanished (SPEC §13): when it was the last, the app terminated and its
    /// snapshots go with it, as a launched app's go with its `release`.
    func adoptedInstanceVanished(_ app: AppID, _ instance: InstanceID) {
        feed(.instanceVanished(app, instance))
        if !machine.keepsSnapshots(of: app) { removeSnapshots(app) }
    }

    /// The names in directory `path` but `.` and `..`; empty when it cannot be read.
    static func directoryEntries(_ path: String) -> [String] {
        guard let d = opendir(path) else { return [] }
        defer { closedir(d) }
        var names: [String] = []
        while let entry = readdir(d) {
            let name = FileIO.name(of: entry)
            if name != ".", name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// Removes `path`: a directory with the files in it (one level: snapshot directories hold files), or
    /// anything else itself; a link is removed, never followed.
    static func removeEntry(_ path: String) {
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        guard (st.st_mode & S_IFMT) == S_IFDIR else {
            unlink(path)
            return
        }
        for name in directoryEntries(path) { unlink(path + "/" + name) }
        rmdir(path)
    }
}
