import BGTaskConfig
import BGTaskCore
import BGTaskLaunch
import CSystemd
import Dispatch
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// How an app's processes are stopped and resumed. Every method runs on the daemon's queue and
/// returns quickly (no waiting for the kernel beyond a write and a re-read).
protocol Freezer: AnyObject {
    /// `cgroup`, `signal` or `none`, as in `FreezerBackend=` and the journal.
    var name: String { get }
    /// Called before spawning: a descriptor of the app's `cgroup.procs` for the child to join
    /// (nil: the app is not placed in a cgroup). The caller closes it.
    func prepareLaunch(app: AppID) -> Int32?
    /// Adopts a process the daemon did not start (an app that checked in on its own).
    func attach(app: AppID, pid: Int32)
    /// Freezes the app's processes and says what it found: `frozen` (every process frozen or stopped, or
    /// none to stop), `notYet`, or `failed` (it could not freeze: why). What follows is the core's
    /// (DaemonCore+Freezes.swift): it looks again with ``checkFreeze(app:pid:late:)``, or falls back to
    /// ``freezeWithSignals(app:pid:)``. No timer of its own.
    func freeze(app: AppID, pid: Int32?) -> FreezeFact
    /// Looks once whether the freeze under way is done (`late`: log the processes that still run).
    func checkFreeze(app: AppID, pid: Int32?, late: Bool) -> FreezeFact
    /// Stops the app's processes with SIGSTOP (the core's fallback when ``freeze(app:pid:)`` failed).
    func freezeWithSignals(app: AppID, pid: Int32?) -> FreezeFact
    /// A freeze it watches (the cgroup freezer's inotify watch) is done now (called on the daemon's queue).
    var onFrozen: ((AppID) -> Void)? { get set }
    func thaw(app: AppID, pid: Int32?)
    /// SIGTERM (or another signal) to every process of the app.
    func signal(app: AppID, pid: Int32?, _ sig: Int32)
    /// Kills every process of the app at once (cgroup.kill, or SIGKILL to each; works when frozen).
    func kill(app: AppID, pid: Int32?)
    /// The app has no process left: forget it (remove its cgroup).
    func released(app: AppID)
    /// Daemon stops: thaw everything so that nothing stays frozen unmanaged.
    func thawAll()
}

extension Cgroup {
    /// fstatfs(2) says CGROUP2_SUPER_MAGIC (CSystemd's shim).
    static func isCgroup2(fd: Int32) -> Bool { bgtaskd_is_cgroup2_fd(fd) == 1 }
}

/// `FreezerBackend=none`: decide and log only (a dry run). No process is frozen, thawed, signalled or killed.
final class NoFreezer: Freezer {
    var name: String { "none" }
    var onFrozen: ((AppID) -> Void)?
    func prepareLaunch(app: AppID) -> Int32? { nil }
    func attach(app: AppID, pid: Int32) {}
    func freeze(app: AppID, pid: Int32?) -> FreezeFact { .frozen }
    func checkFreeze(app: AppID, pid: Int32?, late: Bool) -> FreezeFact { .frozen }
    func freezeWithSignals(app: AppID, pid: Int32?) -> FreezeFact { .frozen }
    func thaw(app: AppID, pid: Int32?) {}
    func signal(app: AppID, pid: Int32?, _ sig: Int32) {}
    func kill(app: AppID, pid: Int32?) {}
    func released(app: AppID) {}
    func thawAll() {}
}
