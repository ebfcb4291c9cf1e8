import BGTaskCore
import Dispatch
import Logging

#if canImport(Glibc)
import Glibc
import BGTaskConfig
#endif

/// `FreezerBackend=cgroup` (SPEC §9): each app runs in its own cgroup v2 leaf `apps/<app-id>` under the
/// daemon's subtree. Freeze writes `cgroup.freeze` and is reported only once `cgroup.events` says
/// `frozen 1` (re-read at once, else watched with inotify — never a sleep loop); thaw is complete when
/// the write returns; kill is `cgroup.kill`, which also works on a frozen app. An app whose process
/// checked in from outside and cannot be moved into its cgroup is managed with signals instead.
/// A freeze that does not complete is the core's deadline (`FreezeTimeoutSec`, SPEC §14), not this
/// freezer's: it only reports "frozen" (or "failed": a `cgroup.freeze` write that failed; the fallback to
/// SIGSTOP is the core's decision, `freeze-fallback`, performed by ``freezeWithSignals(app:pid:)``). A cgroup it froze that someone else thaws (`cgroup.freeze` 0, seen
/// through the same inotify watch) is reported to ``onThawedExternally``.
final class CgroupFreezer: Freezer {
    var name: String { "cgroup" }
    var onFrozen: ((AppID) -> Void)?
    /// SPEC §14: an app this freezer holds frozen was thawed by someone else (called on the daemon's queue).
    var onThawedExternally: ((AppID) -> Void)?
    let layout: CgroupLayout
    let queue: DispatchQueue
    let logger: Logger
    /// `KillTimeoutSec=`: between SIGTERM and cgroup.kill for what a previous run left running.
    let killTimeoutUSec: Int64
    let watcher: CgroupEventsWatcher
    /// Per-app fallback: apps whose process could not be moved into their cgroup.
    private let signals: SignalFreezer
    private var signalManaged: Set<AppID> = []
    private var pendingFreezes: [AppID: PendingFreeze] = [:]
    /// Apps whose cgroup this freezer froze and saw `frozen 1` (until it thaws, kills or releases them).
    private var held: Set<AppID> = []
    /// The `cgroup.freeze` of the apps frozen last, open until their cgroup is released.
    private(set) var freezeFiles = FreezeDescriptors()
    /// App cgroups to remove as soon as they are empty (keyed by directory name).
    private var removeWhenEmpty: Set<String> = []
    /// What a previous run left running, by directory name (Recovery.swift).
    var leftovers: [String: Leftover] = [:]
    var leftoverTimer: (any DispatchSourceTimer)?

    /// Freezes confirmed, and the latency of the last one (µs).
    private(set) var confirmedFreezes = 0
    private(set) var lastFreezeLatencyUSec: Int64?

    struct PendingFreeze {
        var startUSec: Int64
    }

    struct Leftover {
        var pids: [Int32]
        var wasFrozen: Bool
        var killAtUSec: Int64?
    }

    private init(layout: CgroupLayout, queue: DispatchQueue, logger: Logger, killTimeoutUSec: Int64,
                 watcher: CgroupEventsWatcher, stopped: StoppedProcessRecords?)
    {
        self.signals = SignalFreezer(queue: queue, logger: logger, records: stopped)
        self.layout = layout
        self.queue = queue
        self.logger = logger
        self.killTimeoutUSec = killTimeoutUSec
        self.watcher = watcher
        watcher.onChange = { [weak self] key in self?.eventsChanged(key) }
    }

    /// The cgroup freezer when a writable cgroup v2 subtree is available (`CgroupRoot=`, or the daemon's
    /// own delegated cgroup), else nil (the caller falls back to signals). Runs on `queue`; reconciles
    /// what a previous run left under `apps/` before returning.
    /// Says in `why` where the subtree is, or why there is none.
    static func make(config: LoadedConfiguration, logger: Logger, queue: DispatchQueue,
                     stopped: StoppedProcessRecords?, why: inout String) -> (any Freezer)?
    {
        let mounts = readFile("/proc/self/mounts") ?? ""
        let selfCgroup = readFile("/proc/self/cgroup") ?? ""
        let layout: CgroupLayout
        switch CgroupLayout.plan(cgroupRoot: config.daemon.cgroupRoot, mounts: mounts, selfCgroup: selfCgroup) {
        case .success(let l): layout = l
        case .failure(let error):
            why = "\(error)"
            return nil
        }
        switch layout.setUp() {
        case .success(let notes):
            for note in notes { logger.info("\(note)") }
        case .failure(let error):
            why = "\(error)"
            return nil
        }
        guard let watcher = CgroupEventsWatcher(queue: queue) else {
            why = "inotify_init1: \(Cgroup.errorText(errno))"
            return nil
        }
        why = "apps run under \(layout.apps) (\(layout.origin == .cgroupRoot ? "CgroupRoot=" : "the daemon's delegated cgroup"))"
        let freezer = CgroupFreezer(
            layout: layout, queue: queue, logger: logger, killTimeoutUSec: config.daemon.killTimeoutUSec, watcher: watcher,
            stopped: stopped)
        logger.info("cgroup freezer: apps run under \(layout.apps) (\(layout.origin.rawValue))")
        freezer.recover()
        return freezer
    }

    // MARK: - Freezer

    func prepareLaunch(app: AppID) -> Int32? {
        let key = app.rawValue
        let path = layout.appPath(key)
        signalManaged.remove(app)
        removeWhenEmpty.remove(key)
        if leftovers[key] != nil { killLeftoverNow(key, because: "\(app) is being launched again") }
        let e = Cgroup.makeDirectory(path)
        guard e == 0, key != ".", key != ".." else {
            logger.warning("cannot create the cgroup of \(app) (\(path): \(Cgroup.errorText(e))): managing it with signals",
                           metadata: ["BGTASKD_APP": "\(app)"])
            signalManaged.insert(app)
            return nil
        }
        // A reused directory may still be frozen: a process joining a frozen cgroup freezes at once.
        Cgroup.write(path + "/cgroup.freeze", "0")
        watcher.watch(path, key: key)
        let fd = open(path + "/cgroup.procs", O_WRONLY | O_CLOEXEC)
        if fd < 0 {
            logger.warning("cannot open \(path)/cgroup.procs (\(Cgroup.errorText(errno))): managing \(app) with signals",
                           metadata: ["BGTASKD_APP": "\(app)"])
            signalManaged.insert(app)
            return nil
        }
        return fd
    }

    func attach(app: AppID, pid: Int32) {
        let key = app.rawValue
        let path = layout.appPath(key)
        if let current = Cgroup.path(ofProcess: pid), CgroupLayout.join(layout.mount, current) == path {
            signalManaged.remove(app)
            return
        }
        removeWhenEmpty.remove(key)
        var e = Cgroup.makeDirectory(path)
        if e == 0 {
            Cgroup.write(path + "/cgroup.freeze", "0")
            // The process and what belongs to it (its session if it leads one, its descendants).
            for p in SignalFreezer.processTree(root: pid) {
                let w = Cgroup.write(path + "/cgroup.procs", String(p))
                if p == pid { e = w }
            }
        }
        if e == 0 {
            signalManaged.remove(app)
            watcher.watch(path, key: key)
            logger.info("moved \(app) (pid \(pid), started outside bgtaskd) into \(path)",
                        metadata: ["BGTASKD_APP": "\(app)", "BGTASKD_PID": "\(pid)"])
        } else {
            signalManaged.insert(app)
            logger.notice("cannot move \(app) (pid \(pid)) into \(path) (\(Cgroup.errorText(e))): managing it with signals",
                          metadata: ["BGTASKD_APP": "\(app)", "BGTASKD_PID": "\(pid)"])
        }
    }

    func freeze(app: AppID, pid: Int32?) -> FreezeFact {
        if signalManaged.contains(app) { return signals.freeze(app: app, pid: pid) }
        let start = Monotonic.nowUSec()
        let path = layout.appPath(app.rawValue)
        let e = freezeFiles.write(app, UInt8(ascii: "1"), path: path + "/cgroup.freeze")
        guard e == 0 else {
            cancelPending(app)
            return .failed("\(path)/cgroup.freeze: \(Cgroup.errorText(e))")
        }
        cancelPending(app)
        // issue 15: the watch is normally in place since the launch, before the write: then the kernel's
        // answer is either in this one read or in the inotify event that follows it, and no second
        // read is needed. Only a watch added now (an app whose watch was dropped) needs another look.
        let watchedBefore = watcher.isWatching(key: app.rawValue)
        // Usually already frozen; otherwise the inotify watch reports it.
        if Cgroup.events(path)?.frozen == true {
            confirmed(app, startUSec: start)
            return .frozen
        }
        if !watchedBefore { watcher.watch(path, key: app.rawValue) }
        pendingFreezes[app] = PendingFreeze(startUSec: start)
        // The kernel may have finished between the write and a watch added just now: look once more.
        if !watchedBefore, Cgroup.events(path)?.frozen == true {
            confirmed(app, startUSec: start)
            return .frozen
        }
        return .notYet
    }

    func checkFreeze(app: AppID, pid: Int32?, late: Bool) -> FreezeFact {
        if signalManaged.contains(app) { return signals.checkFreeze(app: app, pid: pid, late: late) }
        // Not pending: the inotify watch saw it done meanwhile.
        guard let pending = pendingFreezes[app] else { return .frozen }
        guard Cgroup.events(layout.appPath(app.rawValue))?.frozen == true else { return .notYet }
        confirmed(app, startUSec: pending.startUSec)
        return .frozen
    }

    /// The core's fallback (`freeze-fallback`): the app is managed with signals from now on.
    func freezeWithSignals(app: AppID, pid: Int32?) -> FreezeFact {
        signalManaged.insert(app)
        return signals.freeze(app: app, pid: pid)
    }

    func thaw(app: AppID, pid: Int32?) {
        held.remove(app)
        if signalManaged.contains(app) { return signals.thaw(app: app, pid: pid) }
        cancelPending(app)
        // The descriptor kept since the freeze: no path walk before the app wakes.
        if freezeFiles.writeKept(app, UInt8(ascii: "0")) == 0 { return signals.thaw(app: app, pid: nil) }
        let path = layout.appPath(app.rawValue)
        let e = Cgroup.write(path + "/cgroup.freeze", "0")
        if e != 0 {
            logger.warning("cannot thaw \(app) (\(path)/cgroup.freeze: \(Cgroup.errorText(e)))", metadata: ["BGTASKD_APP": "\(app)"])
        }
        // A thaw is complete when the write returns (SIGCONT too, for anything stopped by a fallback).
        signals.thaw(app: app, pid: nil)
    }

    func signal(app: AppID, pid: Int32?, _ sig: Int32) {
        if signalManaged.contains(app) { return signals.signal(app: app, pid: pid, sig) }
        let pids = Cgroup.procsRecursive(layout.appPath(app.rawValue))
        for p in pids { _ = Glibc.kill(p, sig) }
        if let pid, !pids.contains(pid) { SignalFreezer.signalTree(root: pid, sig) }
    }

    func kill(app: AppID, pid: Int32?) {
        cancelPending(app)
        held.remove(app)
        if signalManaged.contains(app) { return signals.kill(app: app, pid: pid) }
        let path = layout.appPath(app.rawValue)
        let inCgroup = Cgroup.procsRecursive(path)
        Cgroup.kill(path)
        if let pid, !inCgroup.contains(pid) { SignalFreezer.signalTree(root: pid, SIGKILL) }
    }

    func released(app: AppID) {
        cancelPending(app)
        held.remove(app)
        freezeFiles.close(app)
        if signalManaged.contains(app) { signals.released(app: app) } else { signals.forget(app: app) }
        signalManaged.remove(app)
        let key = app.rawValue
        let path = layout.appPath(key)
        guard Cgroup.isDirectory(path) else { return }
        if let events = Cgroup.events(path), events.populated {
            // The main process is gone; whatever it left behind goes with it, frozen or not.
            let left = Cgroup.procsRecursive(path)
            logger.info("\(app) exited leaving \(left.count) process(es) in its cgroup: killing them (\(left.map(String.init).joined(separator: " ")))",
                        metadata: ["BGTASKD_APP": "\(app)"])
            removeWhenEmpty.insert(key)
            watcher.watch(path, key: key)
            Cgroup.kill(path)
            // Removed when cgroup.events says populated 0 (maybe already).
            eventsChanged(key)
        } else {
            remove(key)
        }
    }

    func thawAll() {
        for name in Cgroup.subdirectories(layout.apps) {
            let path = layout.appPath(name)
            Cgroup.thawTree(path)
            if Cgroup.events(path)?.populated == false { Cgroup.removeTree(path) }
        }
        for app in Array(pendingFreezes.keys) { cancelPending(app) }
        held.removeAll()
        freezeFiles.closeAll()
        signals.thawAll()
    }

    // MARK: - Confirmation and clean-up

    private func cancelPending(_ app: AppID) {
        pendingFreezes.removeValue(forKey: app)
    }

    private func confirmed(_ app: AppID, startUSec: Int64) {
        let latency = Monotonic.nowUSec() - startUSec
        cancelPending(app)
        held.insert(app)
        confirmedFreezes += 1
        lastFreezeLatencyUSec = latency
        let metadata: Logger.Metadata = ["BGTASKD_APP": "\(app)", "BGTASKD_FREEZE_LATENCY_USEC": "\(latency)"]
        logger.info("froze \(app): cgroup.events frozen 1 after \(latency) µs", metadata: metadata)
    }

    private func eventsChanged(_ key: String) {
        let path = layout.appPath(key)
        let events = Cgroup.events(path)
        if let app = AppID(key), let pending = pendingFreezes[app], events?.frozen == true {
            confirmed(app, startUSec: pending.startUSec)
            onFrozen?(app)
        } else if let app = AppID(key), held.contains(app), let events, !events.frozen, events.populated,
                  readFile(path + "/cgroup.freeze")?.hasPrefix("0") == true
        {
            // Not a cgroup still freezing a newcomer (its cgroup.freeze says 1): someone wrote 0 (SPEC §14).
            held.remove(app)
            logger.notice("\(app) was thawed by someone else (\(path)/cgroup.freeze 0)", metadata: ["BGTASKD_APP": "\(app)"])
            onThawedExternally?(app)
        }
        if events?.populated != true {
            if leftovers[key] != nil { leftoverGone(key) }
            if removeWhenEmpty.contains(key) { remove(key) }
        }
    }

    /// SPEC §14 (after system sleep): every app held frozen whose cgroup was thawed meanwhile is reported.
    func recheckHeld() {
        for app in held.sorted() { eventsChanged(app.rawValue) }
    }

    /// Every process of the app: its cgroup's (and the tree of `pid` when it is managed with signals or
    /// lives outside the cgroup).
    func processes(app: AppID, pid: Int32?) -> [Int32] {
        var pids = signalManaged.contains(app) ? [] : Cgroup.procsRecursive(layout.appPath(app.rawValue))
        if let pid, !pids.contains(pid) { pids += SignalFreezer.processTree(root: pid) }
        return pids
    }

    /// Removes an empty app cgroup.
    func remove(_ key: String) {
        removeWhenEmpty.remove(key)
        if let app = AppID(key) { freezeFiles.close(app) }
        watcher.unwatch(key: key)
        let path = layout.appPath(key)
        let e = Cgroup.removeTree(path)
        if e == EBUSY {
            // Something joined meanwhile: try again when it empties.
            removeWhenEmpty.insert(key)
            watcher.watch(path, key: key)
        } else if e != 0 {
            logger.warning("cannot remove \(path): \(Cgroup.errorText(e))")
        }
    }

    func watchForRemoval(_ key: String) {
        removeWhenEmpty.insert(key)
        watcher.watch(layout.appPath(key), key: key)
    }
}
