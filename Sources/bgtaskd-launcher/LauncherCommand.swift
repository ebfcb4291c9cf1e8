import BGTaskCommandLine
import BGTaskConfig
import BGTaskLaunch
import CSystemd

#if canImport(Glibc)
import Glibc
#endif

/// `bgtaskd-launcher [--socket PATH] [--allow-uid USER] [--config-dir DIR]`: starts bgtaskd's apps on its
/// request (privilege separation: the daemon runs unprivileged, this small program holds the right to
/// change uid and to write into the daemon's delegated cgroup). The daemon names only the app; what
/// runs, as whom, comes from the app's manifest in DIR/apps.d.
struct LauncherCommand {
    static let spec = CommandLineSpec(
        command: "bgtaskd-launcher",
        abstract: "Starts bgtaskd's apps on the daemon's request (io.bgtaskd.Launcher).",
        discussion: """
            Under systemd the listening socket is passed (bgtaskd-launcher.socket) and connections are \
            accepted from root and from the socket file's owner (SocketUser=). Without socket activation \
            --socket binds PATH (mode 0600, owned by the --allow-uid user). A request names only the app: \
            its command, user, working directory and environment come from DIR/apps.d/<app-id>.app, \
            read on every request.
            """,
        version: "0.1.0",
        options: [
            .init("socket", help: "Bind and listen on this path when no socket is passed by systemd."),
            .init("allow-uid", help: "User (name or uid) whose requests are served, besides root."),
            .init("config-dir", help: "Directory holding apps.d/ with the app manifests.", defaultValue: "/etc/bgtaskd"),
            .init("adopt-from", help: "The cgroup holding users' user-UID.slice (under the cgroup2 mount point a directory, otherwise a path in the cgroup hierarchy, as AdoptFrom=): ControlAppUnit acts only on app units below it.", defaultValue: "user.slice"),
        ])

    var socket: String?
    var allowUID: String?
    var configDir: String = "/etc/bgtaskd"
    var adoptFrom: String = "user.slice"

    /// Parses the command line and runs; never returns.
    static func main() -> Never {
        switch spec.parse(Array(CommandLine.arguments.dropFirst())) {
        case .failure(let exit):
            CommandLineSpec.finish(exit)
        case .success(let values):
            var command = LauncherCommand()
            command.socket = values["socket"]
            command.allowUID = values["allow-uid"]
            if let v = values["config-dir"] { command.configDir = v }
            if let v = values["adopt-from"] { command.adoptFrom = v }
            if let message = command.validate() { CommandLineSpec.finish(spec.usageError(message)) }
            let message = command.run()
            CommandLineSpec.finish(spec.usageError(message))
        }
    }

    /// What is wrong with the options, if anything.
    func validate() -> String? {
        if !configDir.hasPrefix("/") {
            return "--config-dir must be an absolute path"
        }
        if let allowUID, resolveAllowed(allowUID) == nil {
            return "--allow-uid \(allowUID): no such user"
        }
        if let socket, !isNormalizedAbsolutePath(socket) {
            return "--socket must be an absolute, normalized path"
        }
        return nil
    }

    /// Serves until the process ends; returns only why it cannot start.
    func run() -> String {
        var allowed: Set<UInt32> = [0]
        if let allowUID, let uid = resolveAllowed(allowUID) { allowed.insert(uid) }
        let listenFD: Int32
        if sd_listen_fds(1) >= 1, sd_is_socket_unix(SD_LISTEN_FDS_START, Int32(SOCK_STREAM.rawValue), 1, nil, 0) > 0 {
            listenFD = SD_LISTEN_FDS_START
            // The socket unit's SocketUser= is the one allowed to connect.
            if allowUID == nil, let owner = Self.socketFileOwner(listenFD), owner != 0 { allowed.insert(owner) }
        } else if let socket {
            switch UnixSocketIO.listen(path: socket) {
            case .success(let fd): listenFD = fd
            case .failure(let error): return error.message
            }
            chmod(socket, 0o600)
            if let other = allowed.first(where: { $0 != 0 }) { _ = chown(socket, other, UInt32.max) }
        } else {
            return "no socket passed by systemd: give --socket PATH"
        }
        LauncherServer(listenFD: listenFD, allowedUIDs: allowed, configDirectory: configDir, adoptFrom: adoptFrom).run()
    }

    private func resolveAllowed(_ text: String) -> UInt32? {
        guard let account = Account.parse(text) else { return nil }
        if case .id(let uid) = account { return uid }
        return ResolvedUser.resolve(account)?.uid
    }

    /// The owner of the file a listening Unix socket is bound to.
    static func socketFileOwner(_ fd: Int32) -> UInt32? {
        var addr = sockaddr_un()
        var len = socklen_t(MemoryLayout<sockaddr_un>.size)
        let r = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        guard r == 0 else { return nil }
        let path = withUnsafeBytes(of: addr.sun_path) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        guard path.hasPrefix("/") else { return nil }
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return st.st_uid
    }
}
