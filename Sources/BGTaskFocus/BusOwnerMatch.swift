import BGTaskModel

/// SPEC §14: which app a process owning a session-bus name belongs to, for bgtaskd-focus's bus watch.
///
/// The app whose process (`pid` of `ListApps`) is the owner or one of its ancestors; else the app whose own
/// cgroup holds the owner — a cgroup named after the app: bgtaskd's `apps/<app-id>` or the desktop
/// convention's `app-<launcher>-<app-id>-<random>.scope` / `app-<launcher>-<app-id>@<random>.service`
/// (an adopted app's bus connection may belong to any of its processes). Pure: the caller reads /proc.
public enum BusOwnerMatch: Sendable {
    /// An app as `ListApps` gives it.
    public struct Candidate: Hashable, Sendable {
        public var appID: String
        public var pid: Int64?
        public init(appID: String, pid: Int64?) {
            self.appID = appID
            self.pid = pid
        }
    }

    /// The app owning process `pid`; `parent` gives a process's parent, `cgroupLeaf` the last component of
    /// its cgroup v2 path (nil: unknown).
    public static func app(
        owning pid: Int64, among apps: [Candidate], parent: (Int64) -> Int64?, cgroupLeaf: (Int64) -> String?
    ) -> String? {
        var byPID: [Int64: String] = [:]
        for app in apps { if let p = app.pid { byPID[p] = app.appID } }
        var p = pid
        // A bounded walk: init (1) and the kernel (0) are nobody's app.
        for _ in 0..<64 where p > 1 {
            if let app = byPID[p] { return app }
            guard let next = parent(p), next != p else { break }
            p = next
        }
        guard let leaf = cgroupLeaf(pid) else { return nil }
        return apps.first { app in
            leaf == app.appID || leaf.containsBytes("-\(app.appID)-") || leaf.containsBytes("-\(app.appID)@")
                || leaf.hasSuffix("-\(app.appID).scope") || leaf.hasSuffix("-\(app.appID).service")
        }?.appID
    }
}
