import BGTaskConfig
import BGTaskCore
import BGTaskLaunch
import CSystemd
import Dispatch
import Logging

#if canImport(Glibc)
import Glibc
#endif

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
    /// `pid` is the process this daemon started itself less than a millisecond ago (so it has used less than
    /// one clock tick of CPU time, the unit of /proc's times, unless it ran on more than ten CPUs at once).
    func startedJustNow(_ pid: Int32) -> Bool
}

extension AppLauncher {
    func startedJustNow(_ pid: Int32) -> Bool { false }
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
    /// The last app started by `spawn` and when (CLOCK_MONOTONIC, µs).
    private var lastSpawn: (pid: Int32, atUSec: Int64)?

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
            lastSpawn = (pid, Monotonic.nowUSec())
            return .success(pid)
        case .failure(let failure):
            return .failure(LaunchError(description: failure.message))
        }
    }

    func startedJustNow(_ pid: Int32) -> Bool { startedJustNow(pid, nowUSec: Monotonic.nowUSec()) }

    /// `startedJustNow` at `nowUSec` (tests).
    func startedJustNow(_ pid: Int32, nowUSec: Int64) -> Bool {
        guard let lastSpawn, lastSpawn.pid == pid else { return false }
        return nowUSec - lastSpawn.atUSec < 1_000
    }

    /// When the last `spawn` started `pid` (CLOCK_MONOTONIC, µs; tests).
    func spawnedAtUSec(_ pid: Int32) -> Int64? { lastSpawn?.pid == pid ? lastSpawn?.atUSec : nil }

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
