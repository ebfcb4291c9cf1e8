import BGTaskCore
import Logging
import BGTaskConfig

// SPEC §13: apps started by others. The watcher decodes the cgroup tree into the core's
// `instanceAppeared` / `instanceVanished` inputs; the core decides; `perform` applies its freeze, thaw,
// terminate and kill to the adopted cgroups as well as to the daemon's own.
extension DaemonService {
    /// `[Apps] Adopt=yes`: watch `AdoptFrom=` (default `user.slice` below the cgroup2 mount).
    func startAdoption() {
        let apps = config.daemon.apps
        guard apps.adopt else { return }
        guard let mount = Cgroup.v2Mount(mounts: readFile("/proc/self/mounts") ?? "") else {
            logger.notice("adoption: no cgroup2 file system in /proc/self/mounts; apps started by others are not adopted")
            return
        }
        let root = AppAdoption.rootPath(adoptFrom: apps.adoptFrom, mount: mount)
        guard let watcher = AppAdoption(root: root, mount: mount, queue: queue, logger: logger, dryRun: freezer.name == "none")
        else {
            logger.warning("adoption: inotify_init1 failed; apps started by others are not adopted")
            return
        }
        watcher.knownApp = { [weak self] id in
            guard let self, let app = AppID(id), self.config.manifests[app] != nil else { return nil }
            return app
        }
        watcher.onAppeared = { [weak self] app, instance, pid in self?.feed(.instanceAppeared(app, instance, pid: pid)) }
        watcher.onVanished = { [weak self] app, instance in self?.adoptedInstanceVanished(app, instance) }
        watcher.onFrozen = { [weak self] app in self?.freezePartDone(app) }
        watcher.onThawedExternally = { [weak self] app in self?.thawedExternally(app) }
        // The units belong to their users: an unprivileged daemon writes them through the launcher.
        watcher.control = config.launcherSocketPath.map { UnitControlClient(path: $0) }
        adoption = watcher
        watcher.start()
    }

    /// A reload changed `[Apps] Adopt=` or `AdoptFrom=`: the old watcher's instances are released (thawed,
    /// they keep running; the core journals it, `adoption-changed`), then the new setting is watched; what
    /// it finds is adopted afresh.
    func adoptionSettingsChanged(from old: AppsConfig) {
        let new = config.daemon.apps
        guard old.adopt != new.adopt || (new.adopt && old.adoptFrom != new.adoptFrom) else { return }
        logger.info("adoption: [Apps] Adopt=/AdoptFrom= changed: \(old.adopt ? old.adoptFrom : "off") -> \(new.adopt ? new.adoptFrom : "off")")
        if let watcher = adoption {
            for (app, instance) in watcher.stop() { feed(.instanceReleased(app, instance)) }
            adoption = nil
        }
        startAdoption()
    }
}
