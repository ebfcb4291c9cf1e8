import BGTaskClientCore
import BGTaskFocus
import BGTaskProtocol
import CWlrToplevel

#if canImport(Glibc)
import Glibc
#endif

/// SPEC §14: method calls on the session bus addressed to an app bgtaskd holds suspended wake it
/// (`io.bgtaskd.Manager.WakeForBusCall`), so that the caller gets its answer instead of waiting 25 s.
///
/// The destination's owner (its pid, from the bus) is mapped to the app through bgtaskd's `ListApps`: the
/// app whose process is that pid or one of its ancestors, or whose cgroup holds it (an app's own cgroup
/// names its ID: `apps/<app-id>`, `app-<launcher>-<app-id>-….scope`). Runs on a thread of its own, with
/// a Varlink connection of its own.
final class BusCallWaker: @unchecked Sendable {
    // @unchecked: used only on the thread that runs `run()`.
    let socketPath: String
    let address: String?
    private var connection: VarlinkClientConnection?
    private var watch: OpaquePointer?

    init(socketPath: String, address: String?) {
        self.socketPath = socketPath
        self.address = address
    }

    /// Connects to the session bus as a monitor; false (said in the log) when it cannot.
    func open() -> Bool {
        var error = [CChar](repeating: 0, count: 256)
        let context = Unmanaged.passUnretained(self).toOpaque()
        let callback: bgtaskd_buswatch_callback = { context, destination, sender, member in
            guard let context, let destination, let sender, let member else { return }
            Unmanaged<BusCallWaker>.fromOpaque(context).takeUnretainedValue().methodCall(
                to: String(cString: destination), from: String(cString: sender), member: String(cString: member))
        }
        guard let w = bgtaskd_buswatch_open(address, callback, context, &error, error.count) else {
            log("not watching the session bus for calls to suspended apps: \(cString(error))")
            return false
        }
        watch = w
        log("watching the session bus for method calls to suspended apps")
        return true
    }

    /// Reports calls until the bus goes (then returns).
    func run() {
        guard let watch else { return }
        while bgtaskd_buswatch_wait(watch, -1) == 0 {}
        log("lost the session bus: no longer waking suspended apps for calls to them")
        bgtaskd_buswatch_destroy(watch)
        self.watch = nil
    }

    /// The owners of unique names (`:1.42`), which the bus never gives to another connection.
    private var uniqueOwners: [String: Int64] = [:]
    /// Processes that were no app's at the instant (monotonic µs) noted: not asked about again for a
    /// second (a busy session bus carries many calls to the shell and its services).
    private var notApps: [Int64: Int64] = [:]

    private func methodCall(to destination: String, from sender: String, member: String) {
        guard let watch else { return }
        var owner = uniqueOwners[destination]
        if owner == nil {
            owner = Int64(bgtaskd_buswatch_owner_pid(watch, destination))
            if destination.hasPrefix(":"), let owner, owner > 0 {
                if uniqueOwners.count > 4096 { uniqueOwners.removeAll() }
                uniqueOwners[destination] = owner
            }
        }
        guard let owner, owner > 0 else { return }
        let now = monotonicUSec()
        if let noted = notApps[owner], now - noted < 1_000_000 { return }
        guard let apps = listApps() else { return }
        guard let app = Self.app(owning: owner, among: apps) else {
            if notApps.count > 4096 { notApps.removeAll() }
            notApps[owner] = now
            return
        }
        guard app.state.known == .suspended else { return }
        do {
            let call = ManagerWire.WakeForBusCall(appId: app.appId, sender: sender, member: member)
            _ = try client().call(ManagerMethod.wakeForBusCall.qualifiedName, call.json)
            log("\(app.appId) is suspended and \(sender) called \(member) on \(destination): woken (bus-call)")
        } catch {
            log("WakeForBusCall(\(app.appId)) failed: \(error)")
            connection?.close()
            connection = nil
        }
    }

    private func client() throws(VarlinkClientError) -> VarlinkClientConnection {
        if let connection { return connection }
        let c = try VarlinkClientConnection(path: socketPath)
        c.setTimeout(seconds: 5)
        connection = c
        return c
    }

    private func listApps() -> [ManagerWire.AppInfo]? {
        do {
            let reply = try client().call(ManagerMethod.listApps.qualifiedName)
            return try ManagerWire.ListAppsReply(json: reply).apps
        } catch {
            connection?.close()
            connection = nil
            return nil
        }
    }

    /// The app whose process is `pid` or an ancestor of it, else the app whose own cgroup holds `pid`.
    static func app(owning pid: Int64, among apps: [ManagerWire.AppInfo]) -> ManagerWire.AppInfo? {
        let candidates = apps.map { BusOwnerMatch.Candidate(appID: $0.appId, pid: $0.pid) }
        let id = BusOwnerMatch.app(owning: pid, among: candidates, parent: parentPID, cgroupLeaf: cgroupLeaf)
        return apps.first { $0.appId == id }
    }

    private static func parentPID(_ pid: Int64) -> Int64? {
        guard let stat = readText("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 1 ? Int64(fields[1]) : nil
    }

    /// The last component of the cgroup v2 path of `pid`.
    private static func cgroupLeaf(_ pid: Int64) -> String? {
        guard let text = readText("/proc/\(pid)/cgroup") else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("0::") {
            return line.split(separator: "/").last.map(String.init)
        }
        return nil
    }

    private static func readText(_ path: String) -> String? {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 4096)
        let n = read(fd, &bytes, bytes.count)
        return n > 0 ? String(decoding: bytes[..<n], as: UTF8.self) : nil
    }
}
