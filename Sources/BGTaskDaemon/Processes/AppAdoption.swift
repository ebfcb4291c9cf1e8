import BGTaskCore
import BGTaskLaunch
import Dispatch
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// SPEC §13: apps started by others. Watches (inotify, no polling) the cgroup tree
/// `<AdoptFrom>/user-UID.slice/user@UID.service/app.slice/` for units named by systemd's desktop
/// convention, maps each to a known app, and reports a populated one as an instance that appeared and
/// an emptied or removed one as an instance that vanished. It freezes, thaws, signals and kills those
/// cgroups for the service. It decides nothing: the core does, from `instanceAppeared`/`instanceVanished`.
final class AppAdoption {
    let root: String
    /// The cgroup2 mount point.
    let mount: String
    let logger: Logger
    /// `FreezerBackend=none`: report, never touch the cgroups.
    let dryRun: Bool
    /// The app a candidate ID names, if the daemon knows it.
    var knownApp: (String) -> AppID? = { _ in nil }
    var onAppeared: (AppID, InstanceID, Int32?) -> Void = { _, _, _ in }
    var onVanished: (AppID, InstanceID) -> Void = { _, _ in }
    /// With `LauncherSocket=`: the writes go through bgtaskd-launcher (the cgroups are the users').
    var control: UnitControlClient?
    /// A freeze that `freeze` did not find done is done now: every instance cgroup says `frozen 1` (or is
    /// empty or gone). Seen through the inotify watch on each unit's `cgroup.events`.
    var onFrozen: (AppID) -> Void = { _ in }
    /// Freezes written and not yet seen done, with when they were written.
    private var pendingFreezes: [AppID: Int64] = [:]
    /// SPEC §14: an app whose instances this watcher froze (seen done) was thawed by someone else.
    var onThawedExternally: (AppID) -> Void = { _ in }
    /// Apps whose instances it froze and saw frozen, until it thaws or kills them.
    private var held: Set<AppID> = []

    /// How a freeze of an app's instances started.
    enum FreezeStart: Equatable {
        /// Every instance says `frozen 1` already (or there is none).
        case done
        /// Written; ``onFrozen`` follows once every instance is frozen.
        case pending
        /// A write failed (`error` says which and why): nothing is awaited, the freeze is not made.
        case failed(String)
    }

    private enum Level { case root, userSlice, userManager, appSlice }
    private struct Unit {
        var instance: InstanceID
        var names: AppUnitName
        var app: AppID?
        var present = false
        var eventsWD: Int32?
    }

    private let fd: Int32
    private let queue: DispatchQueue
    private let source: any DispatchSourceRead
    private var dirs: [Int32: (path: String, level: Level)] = [:]
    private var wdByDir: [String: Int32] = [:]
    private var unitByEventsWD: [Int32: String] = [:]
    private var units: [String: Unit] = [:]
    /// The present units of each app (their paths): what `paths(of:)`, `hasInstances` and `firstOwnerUID`
    /// read, for every journaled decision among them, without a pass over every unit. Kept by `update`
    /// and `unitRemoved`, the only places a unit's app or presence changes or a unit goes.
    private var presentByApp: [AppID: Set<String>] = [:]
    private var loggedUnknown: Set<String> = []

    /// nil when inotify is unavailable.
    init?(root: String, mount: String, queue: DispatchQueue, logger: Logger, dryRun: Bool) {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        self.fd = fd
        self.queue = queue
        self.root = root
        self.mount = mount
        self.logger = logger
        self.dryRun = dryRun
        source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setCancelHandler { _ = close(fd) }
        source.setEventHandler { [weak self] in self?.drain() }
        source.resume()
    }

    deinit { source.cancel() }

    /// The watched root from `AdoptFrom=`, read as `CgroupRoot=` is (``CgroupPath/resolve(_:mount:)``).
    static func rootPath(adoptFrom: String, mount: String) -> String {
        CgroupLayout.resolve(adoptFrom, mount: mount)
    }

    /// Starts watching; reports the instances that are already there.
    func start() {
        guard Cgroup.isDirectory(root) else {
            logger.notice("adoption: \(root) does not exist; apps started by others are not adopted")
            return
        }
        addDirectory(root, .root)
        logger.info("adoption: watching \(root) for apps started by others")
    }

    /// After a reload: units not mapped before may name an app now.
    func remap() {
        for path in units.keys.sorted() where units[path]?.app == nil {
            map(path)
            evaluate(path)
        }
    }

    func hasInstances(_ app: AppID) -> Bool { presentByApp[app] != nil }

    /// The owner of the app's first running adopted instance that has one, in instance order (the uid of
    /// the unit's user manager, from its cgroup path); nil when none has.
    func firstOwnerUID(of app: AppID) -> UInt32? {
        // Asked for every journaled decision: a pass over the app's own instances, nothing allocated.
        guard let paths = presentByApp[app] else { return nil }
        var first: (instance: InstanceID, uid: UInt32)?
        for path in paths {
            guard let instance = units[path]?.instance, let uid = instance.ownerUID else { continue }
            if first.map({ instance < $0.instance }) ?? true { first = (instance, uid) }
        }
        return first?.uid
    }

    /// Stops watching (a reload changed `Adopt=`/`AdoptFrom=`): thaws every unit it mapped and returns the
    /// instances that were present, for the core to release.
    func stop() -> [(AppID, InstanceID)] {
        thawAll()
        source.cancel()
        let present = units.values.filter { $0.present }.sorted { $0.instance < $1.instance }
        units = [:]
        presentByApp = [:]
        return present.compactMap { unit in unit.app.map { ($0, unit.instance) } }
    }

    /// The app is no longer managed (its manifest or desktop entry went away): its units are left alone
    /// from now on, until an app of that ID is known again (``remap()``).
    func release(_ app: AppID) {
        for path in units.keys.sorted() where units[path]?.app == app {
            update(path) {
                $0.app = nil
                $0.present = false
            }
            logger.notice("adoption: released \(path) from management: \(app) is no longer an app of bgtaskd",
                          metadata: ["BGTASKD_APP": "\(app)"])
        }
    }

    /// Whether `pid` lives in one of the adopted cgroups (it then stays there: it is not moved into the
    /// daemon's own subtree when it checks in).
    func holds(pid: Int32) -> Bool {
        guard let path = Cgroup.path(ofProcess: pid) else { return false }
        let full = CgroupLayout.join(mount, path)
        return units.keys.contains { full == $0 || full.hasPrefix($0 + "/") }
    }

    // MARK: - Effects (for the core's actions)

    /// Freezes every instance of the app. A write that fails is a failed freeze (it will not freeze
    /// anything later either); the time limit of one not done is the core's (`FreezeTimeoutSec`).
    func freeze(_ app: AppID) -> FreezeStart {
        pendingFreezes[app] = nil
        let start = Monotonic.nowUSec()
        var failures: [String] = []
        for path in paths(of: app) {
            let e = write(path, .freeze)
            if e != 0 {
                failures.append("\(path)/cgroup.freeze: \(Cgroup.errorText(e))")
                logger.warning("adoption: cannot freeze \(path): \(Cgroup.errorText(e))", metadata: ["BGTASKD_APP": "\(app)"])
            } else if Cgroup.events(path)?.frozen == true {
                logger.info("froze \(app) instance \(path): frozen 1 after \(Monotonic.nowUSec() - start) µs",
                            metadata: ["BGTASKD_APP": "\(app)"])
            }
        }
        if !failures.isEmpty { return .failed("cannot write " + failures.joined(separator: ", ")) }
        if dryRun || frozen(app) {
            if !dryRun { held.insert(app) }
            return .done
        }
        pendingFreezes[app] = start
        return .pending
    }

    /// Whether every present instance of the app is frozen (or empty).
    private func frozen(_ app: AppID) -> Bool {
        paths(of: app).allSatisfy { path in
            guard let events = Cgroup.events(path) else { return true }
            return events.frozen || !events.populated
        }
    }

    /// A unit's `cgroup.events` changed or the unit went: reports a pending freeze of its app that is done.
    private func checkPendingFreeze(_ app: AppID?) {
        guard let app, let start = pendingFreezes[app], frozen(app) else { return }
        pendingFreezes[app] = nil
        held.insert(app)
        logger.info("froze \(app): every instance frozen 1 after \(Monotonic.nowUSec() - start) µs",
                    metadata: ["BGTASKD_APP": "\(app)", "BGTASKD_FREEZE_LATENCY_USEC": "\(Monotonic.nowUSec() - start)"])
        onFrozen(app)
    }

    func thaw(_ app: AppID) {
        pendingFreezes[app] = nil
        held.remove(app)
        for path in paths(of: app) {
            let e = write(path, .thaw)
            if e != 0 {
                logger.warning("adoption: cannot thaw \(path): \(Cgroup.errorText(e))", metadata: ["BGTASKD_APP": "\(app)"])
            }
        }
    }

    func signal(_ app: AppID, _ sig: Int32) {
        for path in paths(of: app) {
            for pid in Cgroup.procsRecursive(path) { _ = Glibc.kill(pid, sig) }
        }
    }

    func kill(_ app: AppID) {
        pendingFreezes[app] = nil
        held.remove(app)
        for path in paths(of: app) where write(path, .kill) != 0 {
            for pid in Cgroup.procsRecursive(path) { _ = Glibc.kill(pid, SIGKILL) }
        }
    }

    /// One write to the unit's cgroup: directly, or through the launcher; 0 or an errno.
    @discardableResult
    private func write(_ path: String, _ action: AppUnitControl.Action) -> Int32 {
        if dryRun { return 0 }
        if let control { return control.send(path, action) }
        let (name, value) = action.file
        return Cgroup.write(path + "/" + name, value)
    }

    /// Daemon stops: nothing it froze stays frozen.
    func thawAll() {
        pendingFreezes.removeAll()
        held.removeAll()
        guard !dryRun else { return }
        for (path, unit) in units where unit.app != nil { write(path, .thaw) }
    }

    /// Every process in the app's instances.
    func processes(_ app: AppID) -> [Int32] {
        paths(of: app).flatMap { Cgroup.procsRecursive($0) }
    }

    /// SPEC §14: an instance of an app held frozen whose `cgroup.freeze` someone set to 0 is reported once
    /// (the app is frozen again by the core's `.freeze`, which marks it held again).
    private func checkThawed(_ path: String) {
        guard let app = units[path]?.app, held.contains(app), units[path]?.present == true,
              let events = Cgroup.events(path), !events.frozen, events.populated,
              readFile(path + "/cgroup.freeze")?.hasPrefix("0") == true
        else { return }
        held.remove(app)
        logger.notice("\(app) instance \(path) was thawed by someone else (cgroup.freeze 0)", metadata: ["BGTASKD_APP": "\(app)"])
        onThawedExternally(app)
    }

    /// After system sleep: every held app whose instances were thawed meanwhile is reported.
    func recheckHeld() {
        for path in units.keys.sorted() { checkThawed(path) }
    }

    private func paths(of app: AppID) -> [String] {
        presentByApp[app]?.sorted() ?? []
    }

    /// Changes a unit's fields and keeps `presentByApp` in step with its app and presence.
    private func update(_ path: String, _ change: (inout Unit) -> Void) {
        guard var unit = units[path] else { return }
        let before = unit.present ? unit.app : nil
        change(&unit)
        units[path] = unit
        let after = unit.present ? unit.app : nil
        guard before != after else { return }
        if let before { forget(path, of: before) }
        if let after { presentByApp[after, default: []].insert(path) }
        assert(indexHolds(), "presentByApp out of step after \(path)")
    }

    /// Debug builds: the index is what a pass over every unit finds.
    private func indexHolds() -> Bool {
        var found: [AppID: Set<String>] = [:]
        for (path, unit) in units where unit.present {
            if let app = unit.app { found[app, default: []].insert(path) }
        }
        return found == presentByApp
    }

    private func forget(_ path: String, of app: AppID) {
        presentByApp[app]?.remove(path)
        if presentByApp[app]?.isEmpty == true { presentByApp[app] = nil }
    }

    // MARK: - The tree

    private func addDirectory(_ path: String, _ level: Level) {
        guard wdByDir[path] == nil else { return }
        let mask = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_ONLYDIR)
        let wd = inotify_add_watch(fd, path, mask)
        guard wd >= 0 else {
            logger.warning("adoption: cannot watch \(path): \(Cgroup.errorText(errno))")
            return
        }
        dirs[wd] = (path, level)
        wdByDir[path] = wd
        // Children made before the watch existed.
        for name in Cgroup.subdirectories(path) { childAppeared(path, level, name) }
    }

    private func childAppeared(_ parent: String, _ level: Level, _ name: String) {
        let path = parent + "/" + name
        switch level {
        case .root:
            if isNumbered(name, prefix: "user-", suffix: ".slice") { addDirectory(path, .userSlice) }
        case .userSlice:
            if isNumbered(name, prefix: "user@", suffix: ".service") { addDirectory(path, .userManager) }
        case .userManager:
            if name == "app.slice" { addDirectory(path, .appSlice) }
        case .appSlice:
            unitAppeared(path, name)
        }
    }

    private func isNumbered(_ name: String, prefix: String, suffix: String) -> Bool {
        guard name.hasPrefix(prefix), name.hasSuffix(suffix) else { return false }
        let number = name.dropFirst(prefix.count).dropLast(suffix.count)
        return !number.isEmpty && number.allSatisfy { $0.isASCII && $0.isNumber }
    }

    private func unitAppeared(_ path: String, _ name: String) {
        guard units[path] == nil, let names = AppUnitName.parse(name) else { return }
        let relative = String(path.dropFirst(root.count + 1))
        var unit = Unit(instance: InstanceID(relative), names: names)
        let wd = inotify_add_watch(fd, path + "/cgroup.events", UInt32(IN_MODIFY))
        if wd >= 0 {
            unit.eventsWD = wd
            unitByEventsWD[wd] = path
        }
        units[path] = unit
        map(path)
        evaluate(path)
    }

    private func map(_ path: String) {
        guard let unit = units[path] else { return }
        if let app = unit.names.candidates.lazy.compactMap({ self.knownApp($0) }).first {
            update(path) { $0.app = app }
            return
        }
        let key = unit.names.candidates.first ?? path
        if loggedUnknown.insert(key).inserted {
            logger.notice("adoption: \(unit.instance) looks like app \"\(key)\", which bgtaskd does not know: left alone")
        }
    }

    /// Appeared when populated, vanished when empty.
    private func evaluate(_ path: String) {
        guard let unit = units[path], let app = unit.app else { return }
        let populated = Cgroup.events(path)?.populated ?? false
        if populated, !unit.present {
            update(path) { $0.present = true }
            if !dryRun, Cgroup.events(path)?.frozen == true {
                // Nobody manages it any more (a previous run froze it): it starts thawed, as adopted.
                write(path, .thaw)
                logger.notice("adoption: thawed \(path), frozen by nobody who manages it now")
            }
            onAppeared(app, unit.instance, Cgroup.procsRecursive(path).first)
        } else if !populated, unit.present {
            update(path) { $0.present = false }
            onVanished(app, unit.instance)
        }
    }

    private func unitRemoved(_ path: String) {
        guard let unit = units.removeValue(forKey: path) else { return }
        if unit.present, let app = unit.app { forget(path, of: app) }
        assert(indexHolds(), "presentByApp out of step after removing \(path)")
        if let wd = unit.eventsWD {
            unitByEventsWD[wd] = nil
            _ = inotify_rm_watch(fd, wd)
        }
        if unit.present, let app = unit.app { onVanished(app, unit.instance) }
        checkPendingFreeze(unit.app)
    }

    private func directoryRemoved(_ path: String) {
        if let wd = wdByDir.removeValue(forKey: path) { dirs[wd] = nil }
        for unitPath in units.keys.sorted() where unitPath.hasPrefix(path + "/") { unitRemoved(unitPath) }
        for dir in wdByDir.keys.sorted() where dir.hasPrefix(path + "/") { directoryRemoved(dir) }
    }

    /// The kernel's event queue overflowed: what was missed is found by looking again.
    private func rescan() {
        logger.notice("adoption: inotify queue overflow, rescanning \(root)")
        for unitPath in units.keys.sorted() where !Cgroup.isDirectory(unitPath) { unitRemoved(unitPath) }
        for dir in wdByDir.keys.sorted() where !Cgroup.isDirectory(dir) { directoryRemoved(dir) }
        for (wd, entry) in dirs.sorted(by: { $0.value.path < $1.value.path }) where dirs[wd] != nil {
            for name in Cgroup.subdirectories(entry.path) { childAppeared(entry.path, entry.level, name) }
        }
        for unitPath in units.keys.sorted() { evaluate(unitPath) }
    }

    private func drain() {
        for event in readInotifyEvents(fd) { handle(wd: event.wd, mask: event.mask, name: event.name) }
    }

    private func handle(wd: Int32, mask: UInt32, name: String) {
        if mask & UInt32(IN_Q_OVERFLOW) != 0 { return rescan() }
        if let path = unitByEventsWD[wd] {
            if mask & UInt32(IN_IGNORED) != 0 {
                unitByEventsWD[wd] = nil
                units[path]?.eventsWD = nil
            }
            evaluate(path)
            checkPendingFreeze(units[path]?.app)
            checkThawed(path)
            return
        }
        guard let (dir, level) = dirs[wd] else { return }
        if mask & UInt32(IN_IGNORED) != 0 {
            directoryRemoved(dir)
            return
        }
        guard !name.isEmpty else { return }
        let path = dir + "/" + name
        if mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 {
            childAppeared(dir, level, name)
        } else if mask & UInt32(IN_DELETE | IN_MOVED_FROM) != 0 {
            if level == .appSlice { unitRemoved(path) } else { directoryRemoved(path) }
        }
    }
}
