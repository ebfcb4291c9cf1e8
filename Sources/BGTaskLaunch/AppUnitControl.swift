public import BGTaskProtocol

/// `io.bgtaskd.Launcher.ControlAppUnit` (SPEC §13): the unprivileged daemon asks bgtaskd-launcher (root)
/// to freeze, thaw or kill one cgroup of an app it adopted: a unit of systemd's desktop naming directly
/// under a user manager's `app.slice`. Those cgroups belong to the user (systemd delegates the user
/// manager's subtree to it), so the daemon cannot write their `cgroup.freeze`/`cgroup.kill` itself.
///
/// What the launcher accepts is checked narrowly (``problem(_:mount:adoptRoot:)``, then on the opened
/// directory): nothing but `<adopt root>/user-UID.slice/user@UID.service/app.slice/app-….scope|.service`,
/// a cgroup2 directory owned by that very UID, and only these three writes. A compromised daemon gains
/// nothing by it that it does not have already: it may SIGSTOP/SIGKILL those processes with `CAP_KILL`.
public enum AppUnitControl: Sendable {
    public static let method = LauncherMethod.controlAppUnit.qualifiedName

    /// What to do to the unit's cgroup.
    public enum Action: String, CaseIterable, Sendable {
        /// `cgroup.freeze` 1.
        case freeze
        /// `cgroup.freeze` 0.
        case thaw
        /// `cgroup.kill` 1.
        case kill

        /// The cgroup file written and its content.
        public var file: (name: String, value: String) {
            switch self {
            case .freeze: ("cgroup.freeze", "1")
            case .thaw: ("cgroup.freeze", "0")
            case .kill: ("cgroup.kill", "1")
            }
        }
    }

    /// The call the daemon sends: oneway (it learns the outcome from `cgroup.events`, which it watches).
    public static func call(cgroup: String, action: Action, oneway: Bool = true) -> VarlinkCall {
        VarlinkCall(LauncherMethod.controlAppUnit, LauncherWire.ControlAppUnit(cgroup: cgroup, action: action.rawValue), oneway: oneway)
    }

    /// Decodes a received call's parameters; unknown ones are refused.
    public static func decode(_ p: [String: JSON]) throws(LaunchFailure) -> (cgroup: String, action: Action) {
        if let unknown = p.keys.sorted().first(where: { !LauncherWire.ControlAppUnit.fields.contains($0) }) {
            throw LaunchFailure(.invalidRequest, "unknown parameter \(unknown)")
        }
        let wire: LauncherWire.ControlAppUnit
        do {
            wire = try LauncherWire.ControlAppUnit(json: p)
        } catch where error.field == "cgroup" {
            throw LaunchFailure(.invalidRequest, "cgroup must be a string")
        } catch {
            throw LaunchFailure(.invalidRequest, "action must be one of: freeze, thaw, kill")
        }
        guard let action = Action(rawValue: wire.action) else {
            throw LaunchFailure(.invalidRequest, "action must be one of: freeze, thaw, kill")
        }
        return (wire.cgroup, action)
    }

    /// The uid the unit's path names, or why the path is not one the launcher may touch. `adoptRoot` is the
    /// cgroup holding the `user-UID.slice` cgroups (absolute, inside the cgroup2 mount `mount`).
    public static func check(_ path: String, mount: String, adoptRoot: String) -> Result<UInt32, LaunchFailure> {
        func refuse(_ why: String) -> Result<UInt32, LaunchFailure> { .failure(LaunchFailure(.permissionDenied, "\(path): \(why)")) }
        if let problem = CgroupPath.problem(path, mount: mount) { return .failure(LaunchFailure(.permissionDenied, problem)) }
        guard adoptRoot == mount || adoptRoot.hasPrefix(mount + "/") else { return refuse("the adoption root is outside the cgroup2 mount") }
        guard path.hasPrefix(adoptRoot + "/") else { return refuse("not below \(adoptRoot)") }
        let parts = path.dropFirst(adoptRoot.count + 1).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return refuse("not user-UID.slice/user@UID.service/app.slice/app-…") }
        guard let uid = number(parts[0], "user-", ".slice"), let uid2 = number(parts[1], "user@", ".service"), uid == uid2
        else { return refuse("not a user manager's cgroup (user-UID.slice/user@UID.service)") }
        guard parts[2] == "app.slice" else { return refuse("not in app.slice") }
        let unit = parts[3]
        guard unit.hasPrefix("app-"), unit.hasSuffix(".scope") || unit.hasSuffix(".service") else {
            return refuse("not an app unit (app-….scope or app-….service)")
        }
        return .success(uid)
    }

    private static func number(_ s: Substring, _ prefix: String, _ suffix: String) -> UInt32? {
        guard s.hasPrefix(prefix), s.hasSuffix(suffix) else { return nil }
        let digits = s.dropFirst(prefix.count).dropLast(suffix.count)
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return UInt32(digits)
    }
}
