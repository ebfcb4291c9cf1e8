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
    /// Freezes the app's processes. True when the freeze is already done (every process frozen or stopped,
    /// or none to stop); otherwise the freezer watches for it and calls ``onFrozen`` once it is done (a
    /// thaw, kill or release of the app calls that off).
    func freeze(app: AppID, pid: Int32?) -> Bool
    /// A freeze that `freeze` did not find done is done now (called on the daemon's queue).
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
    func freeze(app: AppID, pid: Int32?) -> Bool { true }
    func thaw(app: AppID, pid: Int32?) {}
    func signal(app: AppID, pid: Int32?, _ sig: Int32) {}
    func kill(app: AppID, pid: Int32?) {}
    func released(app: AppID) {}
    func thawAll() {}
}

/// `FreezerBackend=signal`: SIGSTOP/SIGCONT to every process of the app: its session (an app started
/// by the daemon leads its own session, so children started later are in it), the descendants of
/// its main process, and its descendants that daemonized themselves and were re-parented to the daemon
/// (a child subreaper; ``AppProcessTracker``). An app that exits leaves nothing running: whatever is left
/// of it is killed when it is released, as the cgroup freezer kills what is left in the app's cgroup.
///
/// A freeze is done only when every process signalled is stopped (`T`/`t` in /proc/PID/stat) or gone:
/// kill(2) only makes SIGSTOP pending, and each process (each thread) stops when it is next scheduled —
/// tens of milliseconds for busy processes on a loaded machine. It is looked at once right after the
/// signals; if not done yet, a timer on the daemon's queue looks again (0.5 ms, then doubling up to
/// 20 ms apart; 100 ms apart once late), since the kernel gives no event for "a process that is not my
/// child stopped" (waitid/SIGCHLD report stops of children only, a pidfd only the exit). Not done after
/// `CgroupFreezer.confirmWarningUSec` (1 s): a warning naming the processes that still run, and it is
/// still awaited, as the cgroup freezer does. SIGCONT needs no such wait: the kernel wakes every stopped
/// thread in kill(2) itself, so no process is stopped any more when it returns.
final class SignalFreezer: Freezer {
    var name: String { "signal" }
    var onFrozen: ((AppID) -> Void)?
    private var frozen: [AppID: Int32] = [:]
    /// Whose processes are whose (daemonized descendants included).
    private var tracker = AppProcessTracker()
    /// issue 5: records of the processes stopped, so that a daemon restarted after a crash finds them
    /// (SignalRecovery.swift); nil: not recorded.
    let records: StoppedProcessRecords?
    let queue: DispatchQueue
    let logger: Logger

    /// Freezes whose processes were not all stopped yet when last looked at.
    private var pending: [AppID: PendingStop] = [:]
    private struct PendingStop {
        /// Every process SIGSTOP was sent to.
        var pids: [Int32]
        var startUSec: Int64
        /// The "not stopped after 1 s" warning was logged.
        var warned = false
    }
    /// One timer for every pending freeze, armed only while one is pending.
    private var recheckTimer: (any DispatchSourceTimer)?
    private var recheckArmed = false
    private var recheckDelayUSec: Int64 = SignalFreezer.firstRecheckUSec
    static let firstRecheckUSec: Int64 = 500
    static let maxRecheckUSec: Int64 = 20_000
    static let lateRecheckUSec: Int64 = 100_000

    /// Freezes confirmed, and the latency of the last one (µs).
    private(set) var confirmedFreezes = 0
    private(set) var lastFreezeLatencyUSec: Int64?

    init(queue: DispatchQueue, logger: Logger, records: StoppedProcessRecords? = nil) {
        self.queue = queue
        self.logger = logger
        self.records = records
    }

    deinit { recheckTimer?.cancel() }

    func prepareLaunch(app: AppID) -> Int32? { nil }
    func attach(app: AppID, pid: Int32) {}

    func freeze(app: AppID, pid: Int32?) -> Bool {
        guard let pid else { return true }
        pending[app] = nil
        let start = Monotonic.nowUSec()
        // issue 5: recorded before stopping (a crash in between must not leave an unrecorded stop),
        // and again if children turned up meanwhile.
        let known = records == nil ? [] : members(app, pid)
        records?.stopped(app: app, pids: known)
        let stopped = signalApp(app, pid, SIGSTOP)
        frozen[app] = pid
        if stopped != known { records?.stopped(app: app, pids: stopped) }
        if Self.notStopped(stopped).isEmpty {
            confirmed(app, startUSec: start, late: false)
            return true
        }
        pending[app] = PendingStop(pids: stopped, startUSec: start)
        armRecheck(restart: true)
        return false
    }

    func thaw(app: AppID, pid: Int32?) {
        pending[app] = nil
        guard let pid = pid ?? frozen[app] else { return }
        // Done when kill(2) returns: SIGCONT wakes every stopped thread in the sender's call (and discards a
        // SIGSTOP not yet acted on).
        signalApp(app, pid, SIGCONT)
        frozen[app] = nil
        records?.cleared(app: app)  // issue 5
    }

    func signal(app: AppID, pid: Int32?, _ sig: Int32) {
        guard let pid else { return }
        signalApp(app, pid, sig)
    }

    func kill(app: AppID, pid: Int32?) {
        pending[app] = nil
        signalApp(app, pid, SIGKILL)
        frozen[app] = nil
        records?.cleared(app: app)  // issue 5
    }

    /// The app's main process is gone: what it left running (a child it did not wait for, a daemonized
    /// descendant) is killed, then the app is forgotten.
    func released(app: AppID) {
        let left = signalApp(app, nil, SIGKILL)
        if !left.isEmpty {
            logger.info(
                "\(app) exited leaving \(left.count) process(es): killing them (\(left.map(String.init).joined(separator: " ")))",
                metadata: ["BGTASKD_APP": "\(app)"])
        }
        forget(app: app)
    }

    /// Forgets the app without looking for what it left (the cgroup freezer kills that itself).
    func forget(app: AppID) {
        pending[app] = nil
        frozen[app] = nil
        tracker.forget(app)
        records?.cleared(app: app)  // issue 5
    }

    func thawAll() {
        pending.removeAll()
        for (app, pid) in frozen {
            signalApp(app, pid, SIGCONT)
            records?.cleared(app: app)  // issue 5
        }
        frozen.removeAll()
    }

    // MARK: - Confirmation

    /// The processes of `pids` that run (pid, state letter): neither stopped (`T`, `t`) nor gone (`Z`,
    /// `X`, no /proc entry).
    static func notStopped(_ pids: [Int32]) -> [(pid: Int32, state: Character)] {
        var out: [(pid: Int32, state: Character)] = []
        for pid in pids {
            guard let stat = readFile("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { continue }
            // "pid (comm) S …": the state is the first character after ") ".
            let rest = stat[stat.index(after: close)...].drop(while: { $0 == " " })
            guard let state = rest.first else { continue }
            if !"TtZX".contains(state) { out.append((pid, state)) }
        }
        return out
    }

    private func confirmed(_ app: AppID, startUSec: Int64, late: Bool) {
        let latency = Monotonic.nowUSec() - startUSec
        confirmedFreezes += 1
        lastFreezeLatencyUSec = latency
        let metadata: Logger.Metadata = ["BGTASKD_APP": "\(app)", "BGTASKD_FREEZE_LATENCY_USEC": "\(latency)"]
        if late {
            logger.notice("froze \(app): every process stopped (SIGSTOP), late, after \(latency) µs", metadata: metadata)
        } else {
            logger.info("froze \(app): every process stopped (SIGSTOP) after \(latency) µs", metadata: metadata)
        }
    }

    /// Arms the look-again timer (`restart`: a new freeze, from the shortest delay).
    private func armRecheck(restart: Bool) {
        if restart { recheckDelayUSec = Self.firstRecheckUSec }
        if restart || !recheckArmed {
            if recheckTimer == nil {
                let t = DispatchSource.makeTimerSource(queue: queue)
                t.setEventHandler { [weak self] in self?.recheck() }
                recheckTimer = t
                t.schedule(deadline: .now() + .microseconds(Int(recheckDelayUSec)), leeway: .microseconds(100))
                t.resume()
            } else {
                recheckTimer?.schedule(deadline: .now() + .microseconds(Int(recheckDelayUSec)), leeway: .microseconds(100))
            }
            recheckArmed = true
        }
    }

    /// Looks at every pending freeze again; reports those done, warns about those late.
    private func recheck() {
        recheckArmed = false
        let now = Monotonic.nowUSec()
        var done: [AppID] = []
        var anyLate = false
        for (app, stop) in pending {
            let running = Self.notStopped(stop.pids)
            if running.isEmpty {
                done.append(app)
                continue
            }
            if !stop.warned, now - stop.startUSec >= CgroupFreezer.confirmWarningUSec {
                pending[app]?.warned = true
                let list = running.map { "\($0.pid) (\($0.state))" }.joined(separator: " ")
                logger.warning(
                    "\(app) is not stopped \(CgroupFreezer.confirmWarningUSec / 1000) ms after SIGSTOP (processes still running: \(list))",
                    metadata: ["BGTASKD_APP": "\(app)"])
            }
            if pending[app]?.warned == true { anyLate = true }
        }
        for app in done {
            guard let stop = pending.removeValue(forKey: app) else { continue }
            confirmed(app, startUSec: stop.startUSec, late: stop.warned)
        }
        if !pending.isEmpty {
            recheckDelayUSec = anyLate ? Self.lateRecheckUSec : min(recheckDelayUSec * 2, Self.maxRecheckUSec)
            recheckTimer?.schedule(deadline: .now() + .microseconds(Int(recheckDelayUSec)), leeway: .microseconds(100))
            recheckArmed = true
        } else {
            // Disarmed, not suspended (a suspended timer cannot be re-scheduled cheaply).
            recheckTimer?.schedule(deadline: .distantFuture)
        }
        for app in done.sorted() { onFrozen?(app) }
    }

    /// The app's processes (`root`: its main process, if any), daemonized descendants included.
    private func members(_ app: AppID, _ root: Int32?) -> [Int32] {
        tracker.members(of: app, root: root, table: .read())
    }

    /// Signals every process of the app as ``signalTree(root:_:)`` does, daemonized descendants included;
    /// returns the pids signalled.
    @discardableResult
    private func signalApp(_ app: AppID, _ root: Int32?, _ sig: Int32) -> [Int32] {
        var signalled: Set<Int32> = []
        for _ in 0..<8 {
            let fresh = members(app, root).filter { !signalled.contains($0) }
            if fresh.isEmpty { break }
            for pid in fresh { _ = Glibc.kill(pid, sig) }
            signalled.formUnion(fresh)
            if sig != SIGSTOP && sig != SIGKILL { break }
        }
        return signalled.sorted()
    }

    /// Signals `root`, every process in the session `root` leads, and every descendant of `root`;
    /// returns the pids signalled.
    @discardableResult
    static func signalTree(root: Int32, _ sig: Int32) -> [Int32] {
        // issue 5: a process that was not stopped yet may have forked between the scan of /proc and
        // its signal. Once kill(2) has returned the target can no longer complete a fork (a pending
        // signal restarts it), so rescanning until nothing new turns up catches every child.
        var signalled: Set<Int32> = []
        for _ in 0..<8 {
            let fresh = processTree(root: root).filter { !signalled.contains($0) }
            if fresh.isEmpty { break }
            for pid in fresh { _ = Glibc.kill(pid, sig) }
            signalled.formUnion(fresh)
            if sig != SIGSTOP && sig != SIGKILL { break }
        }
        return signalled.sorted()
    }

    /// `root` and the processes that belong to it (its session, its descendants), from /proc.
    static func processTree(root: Int32) -> [Int32] {
        ProcessTable.read().tree(roots: [root]).sorted()
    }
}

/// What the daemon's service needs to start apps and hear them exit (``Launcher``; tests pass a fake).
protocol AppLauncher: AnyObject {
    /// (pid, wait status) of every reaped child and (pid, nil) for watched non-children.
    var onExit: ((Int32, Int32?) -> Void)? { get set }
    /// Starts following exits.
    func start()
    /// A child this daemon started (itself or through bgtaskd-launcher) that has not exited.
    func isRunningChild(_ pid: Int32) -> Bool
    /// Reports the exit of a process that is not our child (an app that checked in on its own).
    func watch(pid: Int32)
    /// Starts the app itself; the pid or why not.
    func spawn(_ manifest: AppManifestFile, socketPath: String, cgroupProcsFD: Int32?) -> Result<Int32, Launcher.LaunchError>
    /// Asks bgtaskd-launcher to start the app; `completion` runs later on the daemon's queue.
    func spawnRemotely(appID: String, socketPath: String, launcherSocket: String, cgroupProcsFD: Int32?,
                       completion: @escaping @Sendable (Result<Int32, Launcher.LaunchError>) -> Void)
}

/// Starts apps and watches them exit.
final class Launcher: AppLauncher, @unchecked Sendable {
    // @unchecked: used only on `queue`.
    let queue: DispatchQueue
    /// (pid, wait status) of every reaped child and (pid, nil) for watched non-children.
    var onExit: ((Int32, Int32?) -> Void)?
    private var sigchld: (any DispatchSourceSignal)?
    private var pidfdSources: [Int32: any DispatchSourceRead] = [:]
    private var children: Set<Int32> = []
    /// Apps bgtaskd-launcher started for us, until their pidfd reports the exit.
    private var remoteChildren: Set<Int32> = []
    private var remote: RemoteLauncher?

    init(queue: DispatchQueue) {
        self.queue = queue
    }

    func start() {
        // Orphans of app processes (a daemonized descendant, a child its app did not wait for) become
        // children of the daemon instead of init: the signal freezer finds them (AppProcessTracker) and
        // they are reaped here.
        _ = bgtaskd_set_child_subreaper()
        Glibc.signal(SIGCHLD, SIG_DFL)
        let source = DispatchSource.makeSignalSource(signal: SIGCHLD, queue: queue)
        source.setEventHandler { [weak self] in self?.reap() }
        source.resume()
        sigchld = source
        reap()
    }

    private func reap() {
        while true {
            var status: Int32 = 0
            let pid = waitpid(-1, &status, WNOHANG)
            if pid <= 0 { return }
            // An orphan re-parented to the daemon (a subreaper) is reaped but is no app's exit.
            guard children.remove(pid) != nil else { continue }
            onExit?(pid, status)
        }
    }

    /// True while `pid` is an app the daemon started (itself or through bgtaskd-launcher) that has not exited.
    func isRunningChild(_ pid: Int32) -> Bool { children.contains(pid) || remoteChildren.contains(pid) }

    /// Watches a process the daemon did not start: reports (pid, nil) when it exits.
    func watch(pid: Int32) {
        guard !children.contains(pid), pidfdSources[pid] == nil else { return }
        let fd = bgtaskd_pidfd_open(pid)
        guard fd >= 0 else { return }
        watch(pid: pid, pidfd: fd)
    }

    /// Reports (pid, nil) when the process of `pidfd` exits; owns (and closes) `pidfd`.
    private func watch(pid: Int32, pidfd fd: Int32) {
        pidfdSources[pid]?.cancel()
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [weak self] in
            guard let self else { return }
            self.pidfdSources[pid]?.cancel()
            self.pidfdSources[pid] = nil
            self.remoteChildren.remove(pid)
            self.onExit?(pid, nil)
        }
        source.setCancelHandler { closeDeferred(fd) }
        source.resume()
        pidfdSources[pid] = source
    }

    struct LaunchError: Error, CustomStringConvertible {
        var description: String
    }

    /// Starts `manifest`'s `Exec=` as its `User=`, with `BGTASKD_APP_ID` and `BGTASKD_SOCKET`, itself
    /// (fork/exec; the child joins the cgroup of `cgroupProcsFD`).
    func spawn(_ manifest: AppManifestFile, socketPath: String, cgroupProcsFD: Int32?) -> Result<Int32, LaunchError> {
        let plan: LaunchPlan
        switch LaunchPlan.make(manifest, socketPath: socketPath, inherited: AppEnvironment.current()) {
        case .success(let p): plan = p
        case .failure(let failure): return .failure(LaunchError(description: failure.message))
        }
        let first = plan.argv[0]
        guard let path = Self.resolveExecutable(first) else {
            return .failure(LaunchError(description: "\(first): executable not found"))
        }
        switch AppSpawner.spawn(path: path, argv: plan.argv, environment: plan.environment,
                                workingDirectory: plan.workingDirectory, user: plan.user, cgroupProcsFD: cgroupProcsFD)
        {
        case .success(let pid):
            children.insert(pid)
            return .success(pid)
        case .failure(let failure):
            return .failure(LaunchError(description: failure.message))
        }
    }

    /// `LauncherSocket=`: bgtaskd-launcher starts the app as its manifest (which the launcher reads
    /// itself) says; it is the app's parent and reaps it. The request names the app, not a command.
    /// `completion` runs later, on `queue`, with the pid; the pidfd that comes with the reply reports
    /// the exit as (pid, nil), like `watch(pid:)`.
    func spawnRemotely(appID: String, socketPath: String, launcherSocket: String, cgroupProcsFD: Int32?,
                       completion: @escaping @Sendable (Result<Int32, LaunchError>) -> Void)
    {
        if remote?.path != launcherSocket { remote = RemoteLauncher(path: launcherSocket, queue: queue) }
        guard let remote else { return completion(.failure(LaunchError(description: "no launcher"))) }
        // The launcher opens cgroup.procs itself, from the directory of the one the freezer prepared
        // (read now: the descriptor is closed when this returns).
        let cgroup = cgroupProcsFD.flatMap(Self.cgroupDirectory(ofProcsFD:))
        let request = SpawnRequest(appID: appID, cgroup: cgroup, socketPath: socketPath, environment: AppEnvironment.current())
        remote.spawn(request) { [weak self] result in
            switch result {
            case .failure(let failure):
                completion(.failure(LaunchError(description: failure.message)))
            case .success(let started):
                guard let self else {
                    if let pidfd = started.pidfd { close(pidfd) }
                    return
                }
                self.remoteChildren.insert(started.pid)
                if let pidfd = started.pidfd {
                    self.watch(pid: started.pid, pidfd: pidfd)
                } else {
                    self.watch(pid: started.pid)
                }
                completion(.success(started.pid))
            }
        }
    }

    /// The directory of the `cgroup.procs` file open as `fd` (its /proc/self/fd link).
    static func cgroupDirectory(ofProcsFD fd: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: 4097)
        let n = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        let target = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard target.hasSuffix("/cgroup.procs") else { return nil }
        return String(target.dropLast("/cgroup.procs".count))
    }

    static func resolveExecutable(_ name: String) -> String? {
        let path = getenv("PATH").map { String(cString: $0) } ?? AppEnvironment.defaultPath
        return AppSpawner.resolveExecutable(name, searchPath: path)
    }
}
