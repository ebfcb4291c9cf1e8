public import BGTaskConfig
public import BGTaskProtocol

/// `io.bgtaskd.Launcher`: what bgtaskd asks bgtaskd-launcher (privilege separation: the daemon runs
/// unprivileged and tightly sandboxed, the launcher only starts apps). Varlink framing and JSON; the
/// reply to `Spawn` carries a pidfd of the new process as SCM_RIGHTS. Pure: encoding and validation.
public enum LauncherInterface {
    public static let name = "io.bgtaskd.Launcher"
    public static let spawnMethod = name + ".Spawn"
    /// Longest request or reply (an environment can be long, but not this long).
    public static let maxMessageSize = 256 * 1024

    public static let description = """
        # Starts bgtaskd's apps on the daemon's request (bgtaskd-launcher, privilege separation).
        # Only root and the daemon's uid may connect. The reply carries a pidfd of the new process
        # (SCM_RIGHTS) that stays valid however soon the app exits.
        interface io.bgtaskd.Launcher

        # Starts argv[0] (looked up in the PATH of environment when it has no "/") as user, in cwd,
        # with exactly environment, after moving it into cgroup (a directory in the cgroup2 file
        # system owned by the caller; none: the launcher's own cgroup).
        method Spawn(
          argv: []string,
          user: ?string,
          workingDirectory: ?string,
          environment: []string,
          cgroup: ?string
        ) -> (pid: int)

        error ExecutableNotFound (message: string)
        error NoSuchUser (message: string)
        error CgroupFailed (message: string)
        error SpawnFailed (message: string)
        error InvalidRequest (message: string)
        error PermissionDenied (message: string)
        """
}

/// Why an app could not be started, with the message the daemon journals; on the wire a named error
/// `io.bgtaskd.Launcher.<Kind>` with a `message` parameter.
public struct LaunchFailure: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: String, CaseIterable, Sendable {
        case executableNotFound = "ExecutableNotFound"
        case noSuchUser = "NoSuchUser"
        case cgroupFailed = "CgroupFailed"
        case spawnFailed = "SpawnFailed"
        case invalidRequest = "InvalidRequest"
        case permissionDenied = "PermissionDenied"
        /// Daemon side only: no launcher to talk to, or no reply in time.
        case launcherUnavailable = "LauncherUnavailable"
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }

    /// The error's full Varlink name.
    public var errorName: String { LauncherInterface.name + "." + kind.rawValue }

    public var varlinkError: VarlinkError { VarlinkError(errorName, ["message": .string(message)]) }

    /// The failure a reply's named error stands for; a name that is not the launcher's (e.g.
    /// `org.varlink.service.MethodNotFound`) becomes `spawnFailed` with the name in the message.
    public init(errorName: String, parameters: [String: JSON]) {
        let prefix = LauncherInterface.name + "."
        if errorName.hasPrefix(prefix), let kind = Kind(rawValue: String(errorName.dropFirst(prefix.count))) {
            self.init(kind, parameters["message"]?.stringValue ?? errorName)
        } else {
            let detail = parameters.isEmpty ? "" : " " + JSON.object(parameters).serialized()
            self.init(.spawnFailed, "launcher replied \(errorName)\(detail)")
        }
    }
}

/// The parameters of `io.bgtaskd.Launcher.Spawn`.
public struct SpawnRequest: Equatable, Sendable {
    /// The command line; `argv[0]` is the executable as written in `Exec=`.
    public var argv: [String]
    /// Whom to run it as (nil: the launcher's own user).
    public var user: Account?
    public var workingDirectory: String?
    /// The app's whole environment, `NAME=value` each.
    public var environment: [String]
    /// Absolute path of the app's cgroup directory (nil: none).
    public var cgroup: String?

    public init(argv: [String], user: Account?, workingDirectory: String?, environment: [String], cgroup: String?) {
        self.argv = argv
        self.user = user
        self.workingDirectory = workingDirectory
        self.environment = environment
        self.cgroup = cgroup
    }

    public var parameters: [String: JSON] {
        var p: [String: JSON] = [
            "argv": .array(argv.map { .string($0) }),
            "environment": .array(environment.map { .string($0) }),
        ]
        if let user { p["user"] = .string(user.description) }
        if let workingDirectory { p["workingDirectory"] = .string(workingDirectory) }
        if let cgroup { p["cgroup"] = .string(cgroup) }
        return p
    }

    /// The call as sent by the daemon.
    public var call: VarlinkCall { VarlinkCall(method: LauncherInterface.spawnMethod, parameters: parameters) }

    /// Decodes and validates the parameters of a received call.
    public init(parameters p: [String: JSON]) throws(LaunchFailure) {
        func strings(_ key: String) throws(LaunchFailure) -> [String] {
            guard let array = p[key]?.arrayValue else { throw LaunchFailure(.invalidRequest, "\(key) must be an array of strings") }
            var out: [String] = []
            for item in array {
                guard let s = item.stringValue else { throw LaunchFailure(.invalidRequest, "\(key) must be an array of strings") }
                out.append(s)
            }
            return out
        }
        func optionalString(_ key: String) throws(LaunchFailure) -> String? {
            switch p[key] {
            case nil, .null?: return nil
            case .string(let s)?: return s
            default: throw LaunchFailure(.invalidRequest, "\(key) must be a string")
            }
        }
        let user: Account?
        if let raw = try optionalString("user") {
            guard let account = Account.parse(raw) else { throw LaunchFailure(.invalidRequest, "user: invalid user name or uid \"\(raw)\"") }
            user = account
        } else {
            user = nil
        }
        self.init(argv: try strings("argv"), user: user, workingDirectory: try optionalString("workingDirectory"),
                  environment: try strings("environment"), cgroup: try optionalString("cgroup"))
        if let problem = validationError() { throw LaunchFailure(.invalidRequest, problem) }
    }

    /// What makes the request unusable, nil when it is fine. Strings go to C as NUL-terminated.
    public func validationError() -> String? {
        guard let first = argv.first, !first.isEmpty else { return "argv must name an executable" }
        if argv.contains(where: { $0.utf8.contains(0) }) { return "argv must not contain NUL" }
        for entry in environment {
            guard let eq = entry.firstIndex(of: "="), eq != entry.startIndex, !entry.utf8.contains(0) else {
                return "environment entries must be NAME=value: \"\(entry)\""
            }
        }
        if let cwd = workingDirectory, !isNormalizedAbsolutePath(cwd) {
            return "workingDirectory must be an absolute, normalized path: \"\(cwd)\""
        }
        if let cgroup, !isNormalizedAbsolutePath(cgroup) {
            return "cgroup must be an absolute, normalized path: \"\(cgroup)\""
        }
        return nil
    }

    /// The `PATH` of `environment`, where an `argv[0]` without a slash is looked up.
    public var searchPath: String {
        environment.last(where: { $0.hasPrefix("PATH=") }).map { String($0.dropFirst(5)) } ?? AppEnvironment.defaultPath
    }
}

/// The reply to `Spawn`: the pid (its pidfd travels beside it).
public enum SpawnReply {
    public static func reply(pid: Int32) -> VarlinkReply { VarlinkReply(parameters: ["pid": .int(Int64(pid))]) }

    /// The pid of a reply, or the failure it reports.
    public static func decode(_ reply: VarlinkReply) -> Result<Int32, LaunchFailure> {
        if let error = reply.error { return .failure(LaunchFailure(errorName: error, parameters: reply.parameters)) }
        guard let raw = reply.parameters["pid"]?.intValue, raw > 0, let pid = Int32(exactly: raw) else {
            return .failure(LaunchFailure(.spawnFailed, "launcher reply without a valid pid"))
        }
        return .success(pid)
    }
}

/// Where the launcher may put a process: a cgroup directory strictly below the cgroup2 mount.
public enum CgroupPath {
    /// Why `path` is not acceptable below the cgroup2 mount point `mount`, nil when it is.
    public static func problem(_ path: String, mount: String) -> String? {
        guard isNormalizedAbsolutePath(path) else { return "\(path): not an absolute, normalized path" }
        guard isNormalizedAbsolutePath(mount) else { return "\(mount): not an absolute, normalized mount point" }
        let prefix = mount == "/" ? "/" : mount + "/"
        guard path.hasPrefix(prefix), path.count > prefix.count else {
            return "\(path): not inside the cgroup2 file system at \(mount)"
        }
        return nil
    }
}

/// Absolute, no empty, `.` or `..` component, no trailing slash (except `/` itself), no NUL.
public func isNormalizedAbsolutePath(_ path: String) -> Bool {
    guard path.hasPrefix("/"), !path.utf8.contains(0) else { return false }
    if path == "/" { return true }
    let parts = path.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
    return !parts.contains { $0.isEmpty || $0 == "." || $0 == ".." }
}

extension CgroupPath {
    /// The mount point of the first cgroup2 file system in `/proc/self/mounts` text (octal escapes undone).
    public static func v2Mount(in mounts: String) -> String? {
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count >= 3, fields[2] == "cgroup2" else { continue }
            var out: [UInt8] = []
            let bytes = Array(fields[1].utf8)
            var i = 0
            while i < bytes.count {
                if bytes[i] == UInt8(ascii: "\\"), i + 3 < bytes.count,
                   let value = UInt8(String(decoding: bytes[(i + 1)...(i + 3)], as: UTF8.self), radix: 8)
                {
                    out.append(value)
                    i += 4
                } else {
                    out.append(bytes[i])
                    i += 1
                }
            }
            return String(decoding: out, as: UTF8.self)
        }
        return nil
    }
}
