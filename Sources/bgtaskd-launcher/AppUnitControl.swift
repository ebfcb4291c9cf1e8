import BGTaskLaunch
import BGTaskProtocol
import CSystemd

#if canImport(Glibc)
import Glibc
#endif

// SPEC §13: freeze, thaw or kill a cgroup of an adopted app for the unprivileged daemon.
extension LauncherServer {
    /// `io.bgtaskd.Launcher.ControlAppUnit`: the path is checked by name (AppUnitControl.check), then the
    /// directory is opened without following links and must be a cgroup2 directory owned by the uid its
    /// name gives; the one file is opened relative to it, without following links, and written.
    func controlAppUnit(_ call: VarlinkCall, on fd: Int32, from uid: UInt32) {
        let result = performControl(call.parameters)
        switch result {
        case .success(let what):
            log("\(what) for uid \(uid)")
            if !call.oneway { _ = UnixSocketIO.send(fd, VarlinkReply(parameters: [:]).encoded(), passing: nil) }
        case .failure(let failure):
            log("ControlAppUnit for uid \(uid) refused: \(failure.errorName): \(failure.message)")
            if !call.oneway { _ = UnixSocketIO.send(fd, VarlinkReply.failure(failure.varlinkError).encoded(), passing: nil) }
        }
    }

    private func performControl(_ parameters: [String: JSON]) -> Result<String, LaunchFailure> {
        let request: (cgroup: String, action: AppUnitControl.Action)
        do { request = try AppUnitControl.decode(parameters) } catch { return .failure(error) }
        guard let mount = cgroupMount, let adoptRoot else {
            return .failure(LaunchFailure(.cgroupFailed, "no cgroup2 file system is mounted"))
        }
        let owner: UInt32
        switch AppUnitControl.check(request.cgroup, mount: mount, adoptRoot: adoptRoot) {
        case .success(let uid): owner = uid
        case .failure(let failure): return .failure(failure)
        }
        let path = request.cgroup
        let dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard dfd >= 0 else { return .failure(LaunchFailure(.cgroupFailed, "\(path): \(String(cString: strerror(errno)))")) }
        defer { close(dfd) }
        guard bgtaskd_is_cgroup2_fd(dfd) == 1 else { return .failure(LaunchFailure(.permissionDenied, "\(path): not a cgroup2 directory")) }
        var st = stat()
        guard fstat(dfd, &st) == 0 else { return .failure(LaunchFailure(.cgroupFailed, "\(path): \(String(cString: strerror(errno)))")) }
        guard st.st_uid == owner else {
            return .failure(LaunchFailure(.permissionDenied, "\(path): owned by uid \(st.st_uid), not by uid \(owner) as its name says"))
        }
        let (name, value) = request.action.file
        let file = openat(dfd, name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)
        guard file >= 0 else { return .failure(LaunchFailure(.cgroupFailed, "\(path)/\(name): \(String(cString: strerror(errno)))")) }
        defer { close(file) }
        var bytes = Array(value.utf8)
        let n = bytes.withUnsafeMutableBytes { Glibc.write(file, $0.baseAddress, $0.count) }
        guard n == bytes.count else {
            return .failure(LaunchFailure(.cgroupFailed, "\(path)/\(name): \(String(cString: strerror(n < 0 ? errno : EIO)))"))
        }
        return .success("\(request.action.rawValue) \(path)")
    }
}
