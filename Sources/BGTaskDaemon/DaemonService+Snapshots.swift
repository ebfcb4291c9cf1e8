import BGTaskConfig
import BGTaskCore
import Logging

#if canImport(Glibc)
import Glibc
#endif

// SPEC §15: scene snapshots. Each app writes them in `<runtime>/snapshots/<app-id>/<sceneId>.png`, a
// directory only the app's user and the daemon can write (`ControlGroup=` can read); the daemon keeps a
// file that is a PNG no larger than `SnapshotMaxBytes` and deletes it when the app terminates.
extension DaemonService {
    /// The snapshot directory of `app`.
    func snapshotDirectory(_ app: AppID) -> String { options.runtimeDir + "/snapshots/" + app.rawValue }

    /// Where the snapshot of `scene` of `app` is written (the `path` of `scene-snapshot`).
    func snapshotPath(_ app: AppID, _ scene: SceneID) -> String { snapshotDirectory(app) + "/" + scene.rawValue + ".png" }

    /// The kept snapshot of each scene of `app`: its path and modification time (realtime µs).
    func snapshot(of app: AppID, _ scene: SceneID) -> (path: String, realtimeUSec: Int64)? {
        snapshotFiles[app]?[scene].map { (snapshotPath(app, scene), $0) }
    }

    /// As a `scene-snapshot` is delivered: makes the app's directory (owned by its user, group
    /// `ControlGroup=`, 0750) and removes the scene's earlier file, so no stale window shows in the switcher.
    func prepareSnapshot(_ app: AppID, _ scene: SceneID) {
        let parent = options.runtimeDir + "/snapshots"
        if mkdir(parent, 0o755) != 0, errno != EEXIST {
            return logger.warning("cannot create \(parent): \(String(cString: strerror(errno)))")
        }
        let dir = snapshotDirectory(app)
        var st = stat()
        if lstat(dir, &st) == 0, (st.st_mode & S_IFMT) != S_IFDIR { unlink(dir) }  // not ours to follow
        if mkdir(dir, 0o750) != 0, errno != EEXIST {
            return logger.warning("cannot create \(dir): \(String(cString: strerror(errno)))")
        }
        let uid = expectedUID(app)
        if chown(dir, uid, config.controlGroupID ?? 0) != 0 || chmod(dir, 0o750) != 0 {
            logger.warning("cannot hand \(dir) to uid \(uid): \(String(cString: strerror(errno)))")
        }
        unlink(snapshotPath(app, scene))
        snapshotFiles[app]?[scene] = nil
    }

    /// As the app is frozen: keeps each scene's file that is a regular PNG file within `SnapshotMaxBytes`;
    /// deletes any other (a `policy` decision, reason `snapshot-refused`, warning).
    func checkSnapshots(_ app: AppID) {
        for scene in machine.scenes(of: app).map(\.id) {
            let path = snapshotPath(app, scene)
            switch Self.inspectSnapshot(path, maxBytes: config.daemon.snapshotMaxBytes) {
            case .missing:
                snapshotFiles[app]?[scene] = nil
            case .kept(let realtimeUSec):
                snapshotFiles[app, default: [:]][scene] = realtimeUSec
            case .refused(let why):
                unlink(path)
                snapshotFiles[app]?[scene] = nil
                var d = Decision(
                    kind: .policy, reason: .snapshotRefused, app: app, severity: .warning,
                    message: "deleted the snapshot of scene \(scene) of \(app): \(why)")
                d.scene = scene
                record(d, call: nil)
            }
        }
    }

    /// The app terminated: its snapshots go with it.
    func removeSnapshots(_ app: AppID) {
        let dir = snapshotDirectory(app)
        snapshotFiles[app] = nil
        guard let d = opendir(dir) else { return }
        while let entry = readdir(d) {
            let name = FileIO.name(of: entry)
            if name != ".", name != ".." { unlink(dir + "/" + name) }
        }
        closedir(d)
        rmdir(dir)
    }

    enum SnapshotVerdict: Equatable {
        case missing
        case kept(realtimeUSec: Int64)
        case refused(String)
    }

    /// Looks at a snapshot without following a link: a regular file, at most `maxBytes`, PNG signature.
    static func inspectSnapshot(_ path: String, maxBytes: Int64) -> SnapshotVerdict {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        if fd < 0 { return errno == ENOENT ? .missing : .refused("it cannot be opened (\(String(cString: strerror(errno))))") }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return .refused("it is not a regular file") }
        guard Int64(st.st_size) <= maxBytes else {
            return .refused("it has \(st.st_size) bytes, more than SnapshotMaxBytes=\(maxBytes)")
        }
        var header = [UInt8](repeating: 0, count: 8)
        let n = header.withUnsafeMutableBytes { read(fd, $0.baseAddress, 8) }
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        guard n == 8, header == png else { return .refused("it is not a PNG") }
        return .kept(realtimeUSec: Int64(st.st_mtim.tv_sec) * 1_000_000 + Int64(st.st_mtim.tv_nsec) / 1000)
    }
}
