import BGTaskCtlKit

#if canImport(Glibc)
import Glibc
#endif

/// Child processes: `journalctl` for `status` and `log`, the command of `hold`.
enum Processes {
    /// What a captured run produced.
    struct Captured {
        var status: Int32
        var stdout: [UInt8]
        var stderr: [UInt8]
    }

    /// Replaces this process with `argv` (searched in PATH). Returns only on failure, with the reason.
    static func exec(_ argv: [String]) -> String {
        let cArgs = argv.map { strdup($0) } + [nil]
        defer { for p in cArgs { free(p) } }
        execvp(argv[0], cArgs)
        return String(cString: strerror(errno))
    }

    /// Runs `argv` with stdin from /dev/null and both outputs captured; throws the errno text when it
    /// cannot start.
    static func capture(_ argv: [String]) throws(CtlError) -> Captured {
        var outPipe: [Int32] = [-1, -1]
        var errPipe: [Int32] = [-1, -1]
        guard pipe(&outPipe) == 0 else { throw CtlError(String(cString: strerror(errno))) }
        guard pipe(&errPipe) == 0 else {
            let e = errno
            close(outPipe[0]); close(outPipe[1])
            throw CtlError(String(cString: strerror(e)))
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        for fd in outPipe + errPipe { posix_spawn_file_actions_addclose(&actions, fd) }

        let pid: pid_t
        do { pid = try spawn(argv, actions: &actions, attributes: nil) } catch {
            for fd in outPipe + errPipe { close(fd) }
            throw error
        }
        close(outPipe[1])
        close(errPipe[1])
        var captured = Captured(status: 0, stdout: [], stderr: [])
        // Both pipes at once, so that a chatty stderr cannot block the child while we read stdout.
        var fds = [pollfd(fd: outPipe[0], events: Int16(POLLIN), revents: 0), pollfd(fd: errPipe[0], events: Int16(POLLIN), revents: 0)]
        var buffer = [UInt8](repeating: 0, count: 16384)
        while fds.contains(where: { $0.fd >= 0 }) {
            let r = poll(&fds, nfds_t(fds.count), -1)
            if r < 0 {
                if errno == EINTR { continue }
                break
            }
            for i in fds.indices where fds[i].fd >= 0 && fds[i].revents != 0 {
                let n = buffer.withUnsafeMutableBytes { read(fds[i].fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 {
                    close(fds[i].fd)
                    fds[i].fd = -1
                } else if i == 0 {
                    captured.stdout += buffer[0..<n]
                } else {
                    captured.stderr += buffer[0..<n]
                }
            }
        }
        for f in fds where f.fd >= 0 { close(f.fd) }
        captured.status = wait(pid)
        return captured
    }

    /// posix_spawnp, returning the child's pid or throwing the errno text.
    static func spawn(
        _ argv: [String], actions: UnsafePointer<posix_spawn_file_actions_t>?, attributes: UnsafePointer<posix_spawnattr_t>?
    ) throws(CtlError) -> pid_t {
        let cArgs = argv.map { strdup($0) } + [nil]
        defer { for p in cArgs { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, argv[0], actions, attributes, cArgs, environ)
        guard rc == 0 else { throw CtlError(String(cString: strerror(rc))) }
        return pid
    }

    /// Waits for `pid` and returns its exit code as a shell reports it (128 + signal if killed).
    static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while true {
            let r = waitpid(pid, &status, 0)
            if r == pid { return WaitStatus.exitCode(status) }
            if r < 0 && errno == EINTR { continue }
            return 1
        }
    }
}

// MARK: - hold's child

/// The child of `hold`, for the signal handler (which can capture nothing).
nonisolated(unsafe) private var heldChildPID: pid_t = 0

/// SIGINT/SIGTERM to bgtaskctl go on to the child. A signal the terminal generated (Ctrl-C) already
/// reached the child, which shares our process group: forwarding it would deliver it twice.
private func forwardSignal(_ signal: Int32, _ info: UnsafeMutablePointer<siginfo_t>?, _ context: UnsafeMutableRawPointer?) {
    let pid = heldChildPID
    guard pid > 0 else { return }
    if let info, info.pointee.si_code == Int32(SI_KERNEL) { return }
    kill(pid, signal)
}

extension Processes {
    static let forwardedSignals: [Int32] = [SIGINT, SIGTERM]

    /// Runs `argv` in the foreground of this process, forwarding SIGINT and SIGTERM to it, and returns
    /// its exit code (128 + signal if killed). Throws the errno text when it cannot start.
    static func runForwardingSignals(_ argv: [String]) throws(CtlError) -> Int32 {
        // Block the signals until the child's pid is known, so none is lost or delivered to nobody.
        var blocked = sigset_t()
        sigemptyset(&blocked)
        for s in forwardedSignals { sigaddset(&blocked, s) }
        var previousMask = sigset_t()
        pthread_sigmask(SIG_BLOCK, &blocked, &previousMask)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in forwardedSignals + [SIGPIPE] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &previousMask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let pid: pid_t
        do { pid = try spawn(argv, actions: nil, attributes: &attributes) } catch {
            pthread_sigmask(SIG_SETMASK, &previousMask, nil)
            throw error
        }
        heldChildPID = pid
        var action = sigaction()
        action.__sigaction_handler.sa_sigaction = forwardSignal
        action.sa_flags = SA_SIGINFO | SA_RESTART
        sigemptyset(&action.sa_mask)
        for s in forwardedSignals { sigaction(s, &action, nil) }
        pthread_sigmask(SIG_SETMASK, &previousMask, nil)

        let code = wait(pid)

        // The child is gone: the signals mean "stop bgtaskctl" again.
        var defaultAction = sigaction()
        defaultAction.__sigaction_handler.sa_handler = SIG_DFL
        for s in forwardedSignals { sigaction(s, &defaultAction, nil) }
        heldChildPID = 0
        return code
    }
}
