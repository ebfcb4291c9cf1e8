public import BGTaskConfig

#if canImport(Glibc)
import Glibc
#endif

/// bgtaskd-launcher's apps from desktop entries (SPEC §13): an app with no manifest in `apps.d` may still
/// be started from its desktop entry, but only from what the administrator's configuration names — never
/// from anything the request says. The request names only the app ID; the launcher itself reads
/// bgtaskd.conf in its `--config-dir`, and:
/// - `[Apps] DesktopEntries=` must be on (the default);
/// - the entry is looked up in `[Apps] DataDirs=`, else in the launcher's own `$XDG_DATA_DIRS` (or the XDG
///   default): the daemon's environment, passed in the request, plays no part;
/// - the entry that wins for the ID (first data directory, as the daemon loads them) must be a regular file
///   owned by root and writable by no one else, like the manifests in `/etc/bgtaskd/apps.d`.
/// A desktop entry has no `User=`: the app runs as the requester (the daemon's own user), as an `apps.d`
/// manifest without `User=` does.
public enum DesktopLaunch: Sendable {
    public static func manifest(id: String, configDirectory: String, noManifestAt path: String)
        -> Result<AppManifestFile, LaunchFailure>
    {
        let none = "\(id): no app manifest \(path)"
        let apps: AppsConfig
        do {
            apps = try DaemonConfig.load(configDirectory: configDirectory).config.apps
        } catch {
            return .failure(LaunchFailure(.noSuchApp, "\(none), and desktop entries are not read: \(error)"))
        }
        guard apps.desktopEntries else {
            return .failure(LaunchFailure(.noSuchApp, "\(none), and [Apps] DesktopEntries=no"))
        }
        let dirs = apps.dataDirs.isEmpty
            ? DesktopEntries.dataDirectories(environment: getenv("XDG_DATA_DIRS").map { String(cString: $0) })
            : apps.dataDirs
        let loaded = DesktopEntries.loadAll(dataDirectories: dirs)
        guard let app = loaded.apps.first(where: { $0.manifest.id == id }) else {
            if let error = loaded.errors.first(where: { isEntry($0.file, of: id) }) {
                return .failure(LaunchFailure(.invalidManifest, error.description))
            }
            return .failure(LaunchFailure(.noSuchApp, "\(none), nor a desktop entry in \(dirs.joined(separator: ":"))"))
        }
        let entry = app.manifest.path
        var st = stat()
        guard stat(entry, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            return .failure(LaunchFailure(.noSuchApp, "\(entry): not a regular file"))
        }
        guard st.st_uid == 0, st.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
            return .failure(LaunchFailure(
                .permissionDenied,
                "\(entry): a desktop entry the launcher starts must be owned by root and writable by no one else "
                    + "(owner uid \(st.st_uid), mode \(String(st.st_mode & 0o7777, radix: 8)))"))
        }
        return .success(app.manifest)
    }

    /// Whether a bad entry's file is the one of `id` (as far as its name tells: the common flat layout).
    private static func isEntry(_ file: String, of id: String) -> Bool {
        DesktopEntries.desktopFileID(relativePath: String(file.split(separator: "/").last ?? "")) == id
    }
}
