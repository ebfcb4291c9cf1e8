import BGTaskConfig
public import BGTaskProtocol

/// `io.bgtaskd.Launcher`: what bgtaskd asks bgtaskd-launcher (privilege separation: the daemon runs
/// unprivileged and tightly sandboxed, the launcher only starts apps). Varlink framing and JSON; the
/// reply to `Spawn` carries a pidfd of the new process as SCM_RIGHTS. Pure: encoding and validation.
public enum LauncherInterface: Sendable {
    public static let name = Interfaces.launcherName
    public static let spawnMethod = LauncherMethod.spawn.qualifiedName
    /// Longest request or reply (an environment can be long, but not this long).
    public static let maxMessageSize = 256 * 1024

    /// The interface's text: varlink/io.bgtaskd.Launcher.varlink (its structs and errors are generated from
    /// it: `LauncherWire`, `LauncherError`).
    public static var description: String { Interfaces.launcher }
}

extension LauncherError {
    /// The sentence every error of the launcher carries.
    public var message: String {
        switch self {
        case .noSuchApp(let m), .invalidManifest(let m), .executableNotFound(let m), .noSuchUser(let m), .cgroupFailed(let m),
            .spawnFailed(let m), .invalidRequest(let m), .permissionDenied(let m):
            return m
        }
    }
}

/// Why an app could not be started, with the message the daemon journals; on the wire a named error
/// `io.bgtaskd.Launcher.<Kind>` with a `message` parameter.
public struct LaunchFailure: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: String, CaseIterable, Sendable {
        /// No manifest for the requested app.
        case noSuchApp = "NoSuchApp"
        /// The app's manifest cannot be read or is invalid (`file:line: key: what`).
        case invalidManifest = "InvalidManifest"
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
            // The launcher's errors are read through the generated `LauncherError`; `LauncherUnavailable` is
            // the daemon's own (never sent by a launcher), with the same `message`.
            let declared = LauncherError(VarlinkError(errorName, parameters))?.message
            let message = declared ?? ((try? WireReader(parameters).optionalString("message")) ?? nil)
            self.init(kind, message.flatMap { $0.isEmpty ? nil : $0 } ?? errorName)
        } else {
            let detail = parameters.isEmpty ? "" : " " + JSON.object(parameters).serialized()
            self.init(.spawnFailed, "launcher replied \(errorName)\(detail)")
        }
    }
}

/// The parameters of `io.bgtaskd.Launcher.Spawn`: which app, not what to run. The launcher takes the
/// command, user, working directory and environment from the app's manifest, so a compromised daemon
/// can start only the configured apps, as their configured users.
public struct SpawnRequest: Equatable, Sendable {
    /// The app whose manifest says what to start; a valid app ID (it names the manifest file).
    public var appID: String
    /// Absolute path of the app's cgroup directory (nil: none).
    public var cgroup: String?
    /// The daemon's socket, the app's `BGTASKD_SOCKET`.
    public var socketPath: String
    /// The daemon's session variables passed on to the app; names from `allowedEnvironment` only.
    public var environment: [String: String]

    /// The variables a request may carry: exactly those the in-process spawn passes on from its own
    /// environment (`AppEnvironment.inheritedNames`).
    public static var allowedEnvironment: [String] { AppEnvironment.inheritedNames }

    public init(appID: String, cgroup: String?, socketPath: String, environment: [String: String]) {
        self.appID = appID
        self.cgroup = cgroup
        self.socketPath = socketPath
        self.environment = environment
    }

    public var parameters: [String: JSON] {
        LauncherWire.Spawn(appId: appID, cgroup: cgroup, socket: socketPath, environment: environment).json
    }

    /// The call as sent by the daemon.
    public var call: VarlinkCall { VarlinkCall(method: LauncherInterface.spawnMethod, parameters: parameters) }

    /// Decodes and validates the parameters of a received call. Unknown parameters (e.g. the `argv` of
    /// an older daemon) are refused rather than ignored: nothing but the app ID chooses what runs.
    public init(parameters p: [String: JSON]) throws(LaunchFailure) {
        let known = Set(LauncherWire.Spawn.fields)
        if let unknown = p.keys.sorted().first(where: { !known.contains($0) }) {
            throw LaunchFailure(.invalidRequest, "unknown parameter \(unknown)")
        }
        let wire: LauncherWire.Spawn
        do {
            wire = try LauncherWire.Spawn(json: p)
        } catch {
            // The environment is the one field that is not a string.
            throw LaunchFailure(
                .invalidRequest,
                error.field == "environment" ? "environment must be an object of strings" : "\(error.field) must be a string")
        }
        self.init(appID: wire.appId, cgroup: wire.cgroup, socketPath: wire.socket, environment: wire.environment)
        if let problem = validationError() { throw LaunchFailure(.invalidRequest, problem) }
    }

    /// What makes the request unusable, nil when it is fine. Strings go to C as NUL-terminated.
    public func validationError() -> String? {
        guard AppManifestFile.isValidID(appID) else { return "appId: invalid app ID \"\(appID)\"" }
        if let name = environment.keys.sorted().first(where: { !Self.allowedEnvironment.contains($0) }) {
            return "environment: \(name) may not be passed on (allowed: \(Self.allowedEnvironment.joined(separator: " ")))"
        }
        if let (name, _) = environment.sorted(by: { $0.key < $1.key }).first(where: { $0.value.utf8.contains(0) }) {
            return "environment: \(name) must not contain NUL"
        }
        if !isNormalizedAbsolutePath(socketPath) {
            return "socket must be an absolute, normalized path: \"\(socketPath)\""
        }
        if let cgroup, !isNormalizedAbsolutePath(cgroup) {
            return "cgroup must be an absolute, normalized path: \"\(cgroup)\""
        }
        return nil
    }
}

/// The reply to `Spawn`: the pid (its pidfd travels beside it); generated from the .varlink file. The
/// launcher writes it and the daemon reads it through this struct.
public typealias SpawnReply = LauncherWire.SpawnReply

extension LauncherWire.SpawnReply {
    public static func reply(pid: Int32) -> VarlinkReply { VarlinkReply(parameters: SpawnReply(pid: Int64(pid)).json) }

    /// The pid of a reply, or the failure it reports.
    public static func decode(_ reply: VarlinkReply) -> Result<Int32, LaunchFailure> {
        if let error = reply.error { return .failure(LaunchFailure(errorName: error, parameters: reply.parameters)) }
        guard let raw = try? SpawnReply(json: reply.parameters).pid, raw > 0, let pid = Int32(exactly: raw) else {
            return .failure(LaunchFailure(.spawnFailed, "launcher reply without a valid pid"))
        }
        return .success(pid)
    }
}

/// Where the launcher may put a process: a cgroup directory strictly below the cgroup2 mount.
public enum CgroupPath: Sendable {
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
    /// A cgroup path as `CgroupRoot=` and `AdoptFrom=` (and the launcher's `--adopt-from`) read it: a path
    /// under the cgroup2 mount point `mount` is a file-system path; any other path is a path in the cgroup
    /// hierarchy, as in `/proc/PID/cgroup` and systemd's `ControlGroup=` (`/x` and `x` name `<mount>/x`).
    public static func resolve(_ path: String, mount: String) -> String {
        if path == mount || path.hasPrefix(mount == "/" ? "/" : mount + "/") { return path }
        if path == "/" || path.isEmpty { return mount }
        return (mount == "/" ? "" : mount) + (path.hasPrefix("/") ? path : "/" + path)
    }

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
