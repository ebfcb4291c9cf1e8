import BGTaskConfig
import BGTaskLaunch
import BGTaskProtocol
import CSystemd

#if canImport(Glibc)
import Glibc
#endif

/// The launcher's one-thread poll loop: accepts connections from the allowed uids, answers
/// `io.bgtaskd.Launcher.Spawn`, and reaps the apps it started (it is their parent) through their pidfds.
final class LauncherServer {
    private struct Client {
        var framer = VarlinkFramer(maxMessageSize: LauncherInterface.maxMessageSize)
        var uid: UInt32
        var pid: Int32
    }

    private let listenFD: Int32
    private let allowedUIDs: Set<UInt32>
    /// Holds `apps.d/<app-id>.app`, read on every Spawn.
    private let configDirectory: String
    let cgroupMount: String?
    /// `--adopt-from`: the cgroup holding users' `user-UID.slice` (AppUnitControl.swift); nil: none.
    let adoptRoot: String?
    private var clients: [Int32: Client] = [:]
    /// pidfd → pid of every app started and not yet reaped.
    private var children: [Int32: Int32] = [:]

    init(listenFD: Int32, allowedUIDs: Set<UInt32>, configDirectory: String, adoptFrom: String = "user.slice") {
        self.listenFD = listenFD
        self.allowedUIDs = allowedUIDs
        self.configDirectory = configDirectory
        let mount = CgroupPath.v2Mount(in: Self.readText("/proc/self/mounts") ?? "")
        cgroupMount = mount
        adoptRoot = mount.map { CgroupPath.resolve(adoptFrom, mount: $0) }
    }

    func run() -> Never {
        signal(SIGPIPE, SIG_IGN)
        // Apps must become zombies until reaped here: that is what keeps their pids (and pidfds) exact.
        signal(SIGCHLD, SIG_DFL)
        setNonBlocking(listenFD)
        log("listening; serving uid \(allowedUIDs.sorted().map(String.init).joined(separator: ", ")); cgroup2 at \(cgroupMount ?? "(none)"); manifests in \(AppManifestFile.appsDirectory(inConfigDirectory: configDirectory))")
        while true {
            var fds = [pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)]
            fds += clients.keys.sorted().map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            fds += children.keys.sorted().map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let n = poll(&fds, nfds_t(fds.count), -1)
            if n < 0 {
                if errno == EINTR { continue }
                log("poll: \(String(cString: strerror(errno)))")
                exit(1)
            }
            for p in fds where p.revents != 0 {
                if p.fd == listenFD {
                    acceptAll()
                } else if clients[p.fd] != nil {
                    readClient(p.fd)
                } else if children[p.fd] != nil {
                    children[p.fd] = nil
                    close(p.fd)
                }
            }
            reap()
        }
    }

    private func reap() {
        var status: Int32 = 0
        while waitpid(-1, &status, WNOHANG) > 0 {}
    }

    private func acceptAll() {
        while true {
            let fd = accept(listenFD, nil, nil)
            if fd < 0 { return }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            setNonBlocking(fd)
            guard let peer = UnixSocketIO.peer(of: fd) else {
                close(fd)
                continue
            }
            guard allowedUIDs.contains(peer.uid) else {
                let allowed = allowedUIDs.sorted().map(String.init).joined(separator: ", ")
                let failure = LaunchFailure(
                    .permissionDenied, "uid \(peer.uid) may not use bgtaskd-launcher (allowed: uid \(allowed))")
                log("refused a connection from pid \(peer.pid) uid \(peer.uid): only uid \(allowed) may spawn apps")
                _ = UnixSocketIO.send(fd, VarlinkReply.failure(failure.varlinkError).encoded(), passing: nil)
                // Unread input would turn the close into a reset that may overtake the error reply.
                while UnixSocketIO.receive(fd).bytes.count > 0 {}
                close(fd)
                continue
            }
            clients[fd] = Client(uid: peer.uid, pid: peer.pid)
        }
    }

    private func readClient(_ fd: Int32) {
        while true {
            let got = UnixSocketIO.receive(fd)
            for extra in got.fds { close(extra) }  // nobody is supposed to send descriptors here
            if got.error == EAGAIN { return }
            if got.error != 0 || got.bytes.isEmpty {
                drop(fd)
                return
            }
            clients[fd]?.framer.append(got.bytes)
            while let client = clients[fd] {
                var framer = client.framer
                let message: ArraySlice<UInt8>?
                do { message = try framer.next() } catch {
                    log("dropping uid \(client.uid): message larger than \(LauncherInterface.maxMessageSize) bytes")
                    drop(fd)
                    return
                }
                clients[fd]?.framer = framer
                guard let message else { break }
                if !handle(message, on: fd, from: client) {
                    drop(fd)
                    return
                }
            }
        }
    }

    private func drop(_ fd: Int32) {
        clients[fd] = nil
        close(fd)
    }

    /// Answers one message; false when the connection must be closed.
    private func handle(_ message: ArraySlice<UInt8>, on fd: Int32, from client: Client) -> Bool {
        let call: VarlinkCall
        do { call = try VarlinkCall.decode(message) } catch {
            let failure = LaunchFailure(.invalidRequest, "not a Varlink call: \(error)")
            _ = UnixSocketIO.send(fd, VarlinkReply.failure(failure.varlinkError).encoded(), passing: nil)
            return false
        }
        if call.method == AppUnitControl.method {
            controlAppUnit(call, on: fd, from: client.uid)
            return true
        }
        guard call.method == LauncherInterface.spawnMethod else {
            if !call.oneway { _ = UnixSocketIO.send(fd, VarlinkReply.failure(.methodNotFound(call.method)).encoded(), passing: nil) }
            return true
        }
        let result: Result<(pid: Int32, pidfd: Int32?), LaunchFailure>
        do {
            result = spawn(try SpawnRequest(parameters: call.parameters), for: client)
        } catch {
            result = .failure(error)
        }
        switch result {
        case .success(let started):
            if let pidfd = started.pidfd { children[pidfd] = started.pid }
            if !call.oneway {
                let e = UnixSocketIO.send(fd, SpawnReply.reply(pid: started.pid).encoded(), passing: started.pidfd)
                if e != 0 {
                    // The daemon gave up waiting (or went away): nobody manages this app, so it must not run.
                    log("cannot reply to uid \(client.uid) (\(String(cString: strerror(e)))): killing pid \(started.pid)")
                    kill(started.pid, SIGKILL)
                }
            }
        case .failure(let failure):
            log("spawn for uid \(client.uid) failed: \(failure.errorName): \(failure.message)")
            if !call.oneway { _ = UnixSocketIO.send(fd, VarlinkReply.failure(failure.varlinkError).encoded(), passing: nil) }
        }
        return true
    }

    /// Starts the request's app as its manifest says (read now, from `configDirectory`): manifest, executable,
    /// user and cgroup checked first, so that each failure has its name.
    private func spawn(_ request: SpawnRequest, for client: Client) -> Result<(pid: Int32, pidfd: Int32?), LaunchFailure> {
        let plan: LaunchPlan
        let manifest: AppManifestFile
        switch LaunchPlan.make(for: request, configDirectory: configDirectory, requesterUID: client.uid) {
        case .success(let made): (plan, manifest) = made
        case .failure(let failure): return .failure(failure)
        }
        let argv0 = plan.argv[0]
        let searchPath = AppEnvironment.executableSearchPath(
            manifestEnvironment: manifest.environment, ownPath: getenv("PATH").map { String(cString: $0) })
        guard let path = AppSpawner.resolveExecutable(argv0, searchPath: searchPath) else {
            return .failure(LaunchFailure(.executableNotFound, "\(argv0): executable not found"))
        }
        var procsFD: Int32?
        if let cgroup = request.cgroup {
            switch openCgroupProcs(cgroup, for: client.uid) {
            case .success(let fd): procsFD = fd
            case .failure(let failure): return .failure(failure)
            }
        }
        defer { if let procsFD { close(procsFD) } }
        switch AppSpawner.spawn(path: path, argv: plan.argv, environment: plan.environment,
                                workingDirectory: plan.workingDirectory, user: plan.user, cgroupProcsFD: procsFD)
        {
        case .failure(let failure):
            return .failure(failure)
        case .success(let pid):
            // Opened before anything can reap the child: the pidfd names exactly this process.
            let pidfd = bgtaskd_pidfd_open(pid)
            log("started \(request.appID) (\(manifest.path)): \(path) as pid \(pid), uid \(plan.user?.uid ?? getuid())"
                + (request.cgroup.map { ", in \($0)" } ?? ""))
            return .success((pid, pidfd >= 0 ? pidfd : nil))
        }
    }

    /// `cgroup.procs` of `dir` opened for writing, once `dir` is known to be a cgroup2 directory under the
    /// mount and (for a caller other than root) owned by the caller, as a delegated subtree is.
    private func openCgroupProcs(_ dir: String, for uid: UInt32) -> Result<Int32, LaunchFailure> {
        guard let mount = cgroupMount else { return .failure(LaunchFailure(.cgroupFailed, "no cgroup2 file system is mounted")) }
        if let problem = CgroupPath.problem(dir, mount: mount) { return .failure(LaunchFailure(.cgroupFailed, problem)) }
        let dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard dfd >= 0 else { return .failure(LaunchFailure(.cgroupFailed, "\(dir): \(String(cString: strerror(errno)))")) }
        defer { close(dfd) }
        guard bgtaskd_is_cgroup2_fd(dfd) == 1 else {
            return .failure(LaunchFailure(.cgroupFailed, "\(dir): not a cgroup2 directory"))
        }
        var st = stat()
        guard fstat(dfd, &st) == 0 else { return .failure(LaunchFailure(.cgroupFailed, "\(dir): \(String(cString: strerror(errno)))")) }
        guard uid == 0 || st.st_uid == uid else {
            return .failure(LaunchFailure(.cgroupFailed, "\(dir): owned by uid \(st.st_uid), not delegated to uid \(uid)"))
        }
        let fd = openat(dfd, "cgroup.procs", O_WRONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            return .failure(LaunchFailure(.cgroupFailed, "\(dir)/cgroup.procs: \(String(cString: strerror(errno)))"))
        }
        return .success(fd)
    }

    func log(_ text: String) { FileIO.write("bgtaskd-launcher: \(text)\n") }

    private func setNonBlocking(_ fd: Int32) { FileIO.setNonBlocking(fd) }

    static func readText(_ path: String) -> String? { FileIO.read(path) }
}
