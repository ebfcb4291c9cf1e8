import BGTaskConfig
import BGTaskCore

#if canImport(Glibc)
import Glibc
#endif

// SPEC §13: apps from desktop entries, and `[Apps] Exempt=`.
extension LoadedConfiguration {
    /// The data directories whose `applications/` are read: `[Apps] DataDirs=`, else `$XDG_DATA_DIRS`,
    /// else the XDG default and Flatpak's exports.
    var desktopDataDirectories: [String] {
        if !daemon.apps.dataDirs.isEmpty { return daemon.apps.dataDirs }
        return DesktopEntries.dataDirectories(environment: getenv("XDG_DATA_DIRS").map { String(cString: $0) })
    }

    /// Adds the apps of the desktop entries (`[Apps] DesktopEntries=yes`) that no manifest in `apps.d`
    /// already defines, and the exempt set. A bad entry becomes a warning naming file, line and key,
    /// and only that app is left out.
    mutating func addDesktopApps() {
        for id in daemon.apps.exempt {
            if let app = AppID(id) { exempt.insert(app) }
        }
        guard daemon.apps.desktopEntries else { return }
        let loaded = DesktopEntries.loadAll(dataDirectories: desktopDataDirectories)
        warnings += loaded.errors.map { "\($0) (app left out)" }
        for desktop in loaded.apps {
            guard let id = AppID(desktop.manifest.id), manifests[id] == nil else { continue }
            manifests[id] = desktop.manifest
            if desktop.exempt { exempt.insert(id) }
        }
    }
}
