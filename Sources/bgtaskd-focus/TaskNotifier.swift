import BGTaskClientCore
import BGTaskFocus
import BGTaskModel
import BGTaskProtocol
import CWlrToplevel
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// SPEC §16: continued tasks as desktop notifications (org.freedesktop.Notifications on the session bus),
/// with their progress and a Cancel action (`io.bgtaskd.Manager.CancelContinuedTask`).
///
/// One thread reads bgtaskd's `Monitor` stream and, at each line that can change the continued tasks (a
/// `progress` line, a task's grant, expiry or end, an app's termination:
/// ``TaskNotifications/mayChangeTasks(decision:)``), wakes the notifier's thread through a pipe; that thread asks `ListContinuedTasks`, lets ``TaskNotifications``
/// (pure) say what to show, update or close, and calls the server; the server's `ActionInvoked(id,
/// "cancel")` comes back on the same thread. The bus connection and the Varlink connection are used only
/// there.
final class TaskNotifier: @unchecked Sendable {
    // @unchecked: the state is used only on the thread that runs `run()`; `socketPath` and `wakeFD` are constants.
    let socketPath: String
    let address: String?
    private var bus: OpaquePointer?
    private var plan = TaskNotifications()
    private var names: [String: String] = [:]
    private var connection: VarlinkClientConnection?
    private var serverMissingSaid = false
    private var shownOnce = false
    private var wakeRead: Int32 = -1
    private var wakeWrite: Int32 = -1

    init(socketPath: String, address: String?) {
        self.socketPath = socketPath
        self.address = address
    }

    /// Connects to the session bus; false (said in the log) when it cannot.
    func open() -> Bool {
        var error = [CChar](repeating: 0, count: 256)
        let context = Unmanaged.passUnretained(self).toOpaque()
        let callback: bgtaskd_notify_callback = { context, id, key, reason in
            guard let context else { return }
            let notifier = Unmanaged<TaskNotifier>.fromOpaque(context).takeUnretainedValue()
            if let key { notifier.actionInvoked(id, key: String(cString: key)) } else { notifier.closed(id, reason: reason) }
        }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            log("not showing continued tasks as notifications: pipe: \(String(cString: strerror(errno)))")
            return false
        }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        }
        let serverCallback: bgtaskd_notify_server_callback = { context, present in
            guard let context else { return }
            Unmanaged<TaskNotifier>.fromOpaque(context).takeUnretainedValue().server(present: present != 0)
        }
        guard let b = bgtaskd_notify_open(address, callback, serverCallback, context, &error, error.count) else {
            log("not showing continued tasks as notifications: \(cString(error))")
            close(fds[0])
            close(fds[1])
            return false
        }
        bus = b
        wakeRead = fds[0]
        wakeWrite = fds[1]
        log("showing continued tasks as desktop notifications (org.freedesktop.Notifications)")
        return true
    }

    /// Starts the Monitor reader and serves the notifications until the session bus goes (then returns).
    func run() {
        guard let bus else { return }
        let socketPath = self.socketPath
        let wake = self.wakeWrite
        DispatchQueue(label: "bgtaskd-focus.monitor").async { Self.followMonitor(socketPath: socketPath, wake: wake) }
        refresh()
        while true {
            let timeout = plan.retryAtUSec.map { Int32(clamping: max(0, ($0 - monotonicUSec() + 999) / 1000)) } ?? -1
            let r = bgtaskd_notify_wait(bus, wakeRead, timeout)
            if r < 0 { break }
            if r == 1 {
                var bytes = [UInt8](repeating: 0, count: 256)
                while read(wakeRead, &bytes, bytes.count) > 0 {}
                refresh()
            } else if let retryAtUSec = plan.retryAtUSec, monotonicUSec() >= retryAtUSec {
                refresh()
            }
        }
        log("lost the session bus: no longer showing continued tasks as notifications")
        bgtaskd_notify_destroy(bus)
        self.bus = nil
    }

    /// Reads bgtaskd's Monitor stream for good (reconnecting after a second when it ends) and writes a
    /// byte to `wake` at each line.
    private static func followMonitor(socketPath: String, wake: Int32) {
        var said = false
        while true {
            do {
                let c = try VarlinkClientConnection(path: socketPath)
                poke(wake)  // (re)connected: the tasks may have changed meanwhile
                try c.stream(ManagerMethod.monitor.qualifiedName) { reply in
                    // Only a line that can change the continued tasks makes the notifier ask for them.
                    let decision = reply["decision"]?.objectValue?["decision"]?.stringValue
                    if TaskNotifications.mayChangeTasks(decision: decision) { poke(wake) }
                    return true
                }
                c.close()
            } catch {
                if !said { log("Monitor of \(socketPath) failed (\(error)); trying again every second") }
                said = true
            }
            sleep(1)
        }
    }

    private static func poke(_ fd: Int32) {
        var byte: UInt8 = 1
        _ = write(fd, &byte, 1)
    }

    private func client() throws(VarlinkClientError) -> VarlinkClientConnection {
        if let connection { return connection }
        let c = try VarlinkClientConnection(path: socketPath)
        c.setTimeout(seconds: 5)
        connection = c
        return c
    }

    private func dropConnection() {
        connection?.close()
        connection = nil
    }

    private func refresh() {
        if let retryAtUSec = plan.retryAtUSec, monotonicUSec() < retryAtUSec { return }
        let tasks: [ManagerWire.ContinuedTask]
        do {
            let reply = try client().call(ManagerMethod.listContinuedTasks.qualifiedName)
            tasks = try ManagerWire.ListContinuedTasksReply(json: reply).tasks
        } catch {
            dropConnection()
            return
        }
        if tasks.contains(where: { names[$0.appId] == nil }) { learnNames() }
        let seen = tasks.map {
            TaskNotifications.Task(
                appID: $0.appId, taskID: $0.taskId.rawValue, title: $0.title, subtitle: $0.subtitle,
                completedUnits: $0.completedUnits, totalUnits: $0.totalUnits)
        }
        for step in plan.update(seen, names: names, nowUSec: monotonicUSec()) {
            if plan.retryAtUSec == nil {
                perform(step)
            } else if case .show(let key, _, _) = step {
                plan.shown(key, id: 0)  // a Notify of this update failed: tried again with it
            }
        }
    }

    private func learnNames() {
        do {
            let reply = try client().call(ManagerMethod.listApps.qualifiedName)
            for app in try ManagerWire.ListAppsReply(json: reply).apps { names[app.appId] = app.name }
        } catch {
            dropConnection()
        }
    }

    private func perform(_ step: TaskNotifications.Step) {
        guard let bus else { return }
        var error = [CChar](repeating: 0, count: 256)
        switch step {
        case .show(let key, let content, let replacing):
            let id = bgtaskd_notify_show(
                bus, content.appName, replacing ?? 0, content.summary, content.body, Int32(content.percent ?? -1), "Cancel",
                &error, error.count)
            plan.shown(key, id: id, nowUSec: monotonicUSec())
            if id == 0 {
                if !serverMissingSaid {
                    log("no notification server owns org.freedesktop.Notifications (\(cString(error))): continued tasks are not shown")
                }
                serverMissingSaid = true
            } else {
                if !shownOnce || serverMissingSaid { log("notification \(id): \(key.appID) task \(key.taskID) \"\(content.summary)\" \(content.body)") }
                shownOnce = true
                serverMissingSaid = false
            }
        case .close(let key, let id):
            if bgtaskd_notify_close(bus, id, &error, error.count) != 0 {
                log("CloseNotification(\(id)) for \(key.appID) task \(key.taskID) failed: \(cString(error))")
            }
        }
    }

    private func actionInvoked(_ id: UInt32, key: String) {
        guard key == "cancel", let task = plan.task(forNotification: id) else { return }
        do {
            let call = ManagerWire.CancelContinuedTask(appId: task.appID, taskId: TaskID(task.taskID))
            _ = try client().call(ManagerMethod.cancelContinuedTask.qualifiedName, call.json)
            log("the user cancelled \(task.appID) task \(task.taskID) from its notification \(id)")
        } catch {
            log("CancelContinuedTask(\(task.appID), \(task.taskID)) failed: \(error)")
            dropConnection()
        }
        refresh()
    }

    /// A server came or went: what the old one showed is gone; everything is shown afresh.
    private func server(present: Bool) {
        plan.server(present: present)
        if present { refresh() }
    }

    private func closed(_ id: UInt32, reason: UInt32) {
        plan.closed(id)
    }
}
