import BGTaskClientCore
import BGTaskCommandLine
import BGTaskFocus
import BGTaskProtocol
import CWlrToplevel
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// `bgtaskd-focus`: follows the compositor's toplevels (wlr-foreign-toplevel-management-unstable-v1) and
/// tells bgtaskd which app is in front (`io.bgtaskd.Manager.SetFocus`, reason `compositor-focus`).
struct FocusCommand {
    static let spec = CommandLineSpec(
        command: "bgtaskd-focus",
        abstract: "Tells bgtaskd which app the Wayland compositor has in front (SPEC §13).",
        discussion: """
            Runs in the user's session (systemd/bgtaskd-focus.service, a user unit). Each toplevel's \
            app_id is the app's ID; the activated toplevel's app comes to the foreground (exclusive), no \
            activated toplevel (the home screen) sends the active app to the background. A change is told \
            only once it has lasted --debounce, so a quick switch back and forth costs no freeze. It also \
            watches the session bus (as a monitor): a method call addressed to an app bgtaskd holds \
            suspended wakes it for BusCallBudgetSec (WakeForBusCall), so the caller gets its answer. The \
            caller needs Manager control rights (root or ControlGroup=). Where a notification server runs \
            (org.freedesktop.Notifications), each continued task (SPEC §16) is a notification with its \
            progress and a Cancel action (CancelContinuedTask). Exits 1 when the compositor goes.
            """,
        version: "0.1.0",
        options: [
            .init("socket", help: "bgtaskd's socket (default: $BGTASKD_SOCKET, else /run/bgtaskd/io.bgtaskd)."),
            .init("display", help: "Wayland display (default: $WAYLAND_DISPLAY)."),
            .init("debounce", help: "How long a change of the front app must last before it is told, in milliseconds.", defaultValue: "300"),
            .init("idle-timeout", help: "After this many milliseconds without user activity the screen counts as blanked: the front app goes to the background (screen-locked) until the user is back. 0: off. Use the screen-blank time of the session (swayidle's, phosh's).", defaultValue: "0"),
            .init("session", help: "logind session whose LockedHint and IdleHint to follow (default: $XDG_SESSION_ID, else the program's own session, else the display session of its user)."),
            .flag("no-logind", help: "Do not follow logind's LockedHint and IdleHint (the session locked or idle: the front app goes to the background, screen-locked)."),
            .flag("no-wayland", help: "Follow no compositor: only wake suspended apps for method calls on the session bus (a device whose compositor offers no wlr-foreign-toplevel-management)."),
            .flag("no-session-bus", help: "Do not watch the session bus for method calls to suspended apps."),
            .init("session-bus", help: "The session bus to watch (default: $DBUS_SESSION_BUS_ADDRESS, else the user bus)."),
            .init("unfocused", help: "How a window that is neither activated nor minimized counts: background (a phone, a tiling workspace: only the front window shows) or inactive (a desktop: it stays visible, foreground-inactive).", defaultValue: "background"),
            .flag("no-notifications", help: "Do not show continued tasks as desktop notifications (org.freedesktop.Notifications on the session bus)."),
            .flag("no-scenes", help: "Report only the front app (SetFocus), not every window as a scene (SetSceneState): for a daemon without scenes."),
        ])

    var socket: String?
    var display: String?
    var debounce: Int = 300
    var idleTimeout: Int = 0
    var logindSession: String?
    var noLogind = false
    var noWayland = false
    var unfocused: SceneTracker.Unfocused = .background
    var noScenes = false
    var noSessionBus = false
    var noNotifications = false
    var sessionBus: String?

    /// Parses the command line (without ArgumentParser: it links FoundationEssentials) and runs.
    static func main() -> Never {
        let values: [String: String]
        switch spec.parse(Array(CommandLine.arguments.dropFirst())) {
        case .failure(let exit): CommandLineSpec.finish(exit)
        case .success(let v): values = v
        }
        var command = FocusCommand()
        command.socket = values["socket"]
        command.display = values["display"]
        command.logindSession = values["session"]
        command.sessionBus = values["session-bus"]
        command.noLogind = values["no-logind"] != nil
        command.noWayland = values["no-wayland"] != nil
        command.noSessionBus = values["no-session-bus"] != nil
        command.noScenes = values["no-scenes"] != nil
        command.noNotifications = values["no-notifications"] != nil
        if let raw = values["unfocused"] {
            guard let mode = SceneTracker.Unfocused(rawValue: raw) else {
                CommandLineSpec.finish(spec.usageError("--unfocused takes background or inactive, not '\(raw)'"))
            }
            command.unfocused = mode
        }
        switch spec.integer(values, "debounce") {
        case .failure(let exit): CommandLineSpec.finish(exit)
        case .success(let n): if let n { command.debounce = n }
        }
        switch spec.integer(values, "idle-timeout") {
        case .failure(let exit): CommandLineSpec.finish(exit)
        case .success(let n): if let n { command.idleTimeout = n }
        }
        command.run()
    }

    /// Follows the compositor (and the session bus) until it goes; exits 1 then.
    func run() -> Never {
        let path = socket ?? getenv("BGTASKD_SOCKET").map { String(cString: $0) } ?? "/run/bgtaskd/io.bgtaskd"
        // SPEC §14: bus calls to suspended apps, on a thread of their own.
        let waker = noSessionBus ? nil : BusCallWaker(socketPath: path, address: sessionBus)
        let watching = waker?.open() ?? false
        // SPEC §16: continued tasks as notifications, on a thread of their own (TaskNotifier.swift).
        let notifier = noNotifications ? nil : TaskNotifier(socketPath: path, address: sessionBus)
        let notifying = notifier?.open() ?? false
        if notifying, let notifier, !noWayland || watching {
            DispatchQueue(label: "bgtaskd-focus.notifications").async { notifier.run() }
        }
        if noWayland {
            if watching, let waker {
                waker.run()
            } else if notifying, let notifier {
                notifier.run()
            } else {
                log("--no-wayland and no session bus to watch: nothing to do")
            }
            exit(1)
        }
        if watching, let waker {
            DispatchQueue(label: "bgtaskd-focus.session-bus").async { waker.run() }
        }
        let session = FocusSession(socketPath: path, debounceUSec: Int64(max(0, debounce)) * 1000, unfocused: unfocused)
        session.sceneMode = !noScenes
        var error = [CChar](repeating: 0, count: 256)
        let context = Unmanaged.passUnretained(session).toOpaque()
        let callback: bgtaskd_focus_callback = { context, toplevel, info in
            guard let context, let info = info?.pointee else { return }
            let session = Unmanaged<FocusSession>.fromOpaque(context).takeUnretainedValue()
            session.toplevel(
                toplevel, appID: info.app_id.map { String(cString: $0) } ?? "", activated: info.activated != 0,
                closed: info.closed != 0)
            session.scene(
                toplevel, appID: info.app_id.map { String(cString: $0) } ?? "", title: info.title.map { String(cString: $0) } ?? "",
                output: info.output.map { String(cString: $0) }, activated: info.activated != 0, minimized: info.minimized != 0,
                closed: info.closed != 0)
        }
        let idleCallback: bgtaskd_focus_idle_callback = { context, idle in
            guard let context else { return }
            Unmanaged<FocusSession>.fromOpaque(context).takeUnretainedValue().screen(locked: idle != 0)
        }
        var idleAvailable: Int32 = 0
        guard let focus = bgtaskd_focus_connect(
            display, callback, idleCallback, UInt32(clamping: max(0, idleTimeout)), &idleAvailable, context, &error, error.count)
        else {
            log(cString(error))
            exit(1)
        }
        defer { bgtaskd_focus_destroy(focus) }
        log("following the compositor's toplevels; telling \(path) (debounce \(debounce) ms)")
        if !noLogind {
            let sessionCallback: bgtaskd_focus_session_callback = { context, locked, idle, gone in
                guard let context else { return }
                Unmanaged<FocusSession>.fromOpaque(context).takeUnretainedValue()
                    .session(locked: locked != 0, idle: idle != 0, gone: gone != 0)
            }
            var sessionPath = [CChar](repeating: 0, count: 256)
            if bgtaskd_focus_follow_session(focus, logindSession, sessionCallback, &sessionPath, sessionPath.count, &error, error.count) == 0 {
                log("following logind's session \(cString(sessionPath)): LockedHint \(session.sessionLocked ? "yes" : "no"), IdleHint \(session.sessionIdle ? "yes" : "no")")
            } else {
                log("not following logind's lock and idle hints: \(cString(error))")
            }
        }
        if idleTimeout > 0 {
            log(idleAvailable != 0 ? "the screen counts as blanked after \(idleTimeout) ms of idleness"
                                   : "the compositor offers no org_kde_kwin_idle: --idle-timeout has no effect")
        }
        while true {
            let next = [session.tracker.nextDeadlineUSec, session.sceneMode ? session.scenes.nextDeadlineUSec : nil].compactMap { $0 }.min()
            let timeout = next.map { Int32(clamping: max(0, ($0 - monotonicUSec() + 999) / 1000)) } ?? -1
            if bgtaskd_focus_wait(focus, timeout) < 0 {
                log("the compositor closed the connection")
                bgtaskd_focus_destroy(focus)
                exit(1)
            }
            session.deadlineReached()
            session.scenesDue()
        }
    }
}

/// The program's state, on its one thread.
final class FocusSession {
    let socketPath: String
    var tracker: FocusTracker
    /// SPEC §15: every toplevel a scene (FocusSession+Scenes.swift); `sceneMode` false: only SetFocus.
    var scenes: SceneTracker
    var sceneMode = true
    var connection: VarlinkClientConnection?

    init(socketPath: String, debounceUSec: Int64, unfocused: SceneTracker.Unfocused = .background) {
        self.socketPath = socketPath
        tracker = FocusTracker(debounceUSec: debounceUSec)
        scenes = SceneTracker(debounceUSec: debounceUSec, unfocused: unfocused)
    }

    func toplevel(_ id: UInt32, appID: String, activated: Bool, closed: Bool) {
        let now = monotonicUSec()
        if closed {
            tracker.toplevelClosed(id, nowUSec: now)
        } else {
            tracker.toplevelChanged(id, appID: appID, activated: activated, nowUSec: now)
        }
    }

    func screen(locked: Bool) {
        log(locked ? "the screen is blank: no app is in front" : "the user is back")
        tracker.screen(.compositorIdle, locked: locked, nowUSec: monotonicUSec())
    }

    /// logind's session: LockedHint and IdleHint as they are now.
    private(set) var sessionLocked = false
    private(set) var sessionIdle = false

    func session(locked: Bool, idle: Bool, gone: Bool) {
        if gone { log("lost the system bus: no longer following logind's lock and idle hints") }
        if locked != sessionLocked { log(locked ? "the session is locked" : "the session is unlocked") }
        if idle != sessionIdle { log(idle ? "the session is idle" : "the session is no longer idle") }
        sessionLocked = locked
        sessionIdle = idle
        let now = monotonicUSec()
        tracker.screen(.sessionLocked, locked: locked, nowUSec: now)
        tracker.screen(.sessionIdle, locked: idle, nowUSec: now)
    }

    func deadlineReached() {
        guard case .setFocus(let app, let reason)? = tracker.deadlineReached(nowUSec: monotonicUSec()) else { return }
        // With scenes, the compositor's focus is told scene by scene; SetFocus only blanks the screen.
        if sceneMode {
            scenes.screen(locked: reason == .screenLocked, nowUSec: monotonicUSec())
            if reason != .screenLocked { return }
        }
        switch setFocus(app, reason: reason) {
        case .success:
            log((app.map { "\($0) is in front" } ?? "no app is in front") + " (\(reason.rawValue))")
        case .failure(let error) where error.errorName == ManagerError.noSuchApp(appId: "").varlinkError.name:
            // In front is a program bgtaskd does not manage: for bgtaskd, none of its apps is.
            log("\(app ?? "") is not an app of bgtaskd: no app is in front")
            if case .failure(let again) = setFocus(nil, reason: reason) { retry(again) }
        case .failure(let error) where error.errorName != nil:
            // The daemon answered (PermissionDenied, InvalidState…): told, and not worth repeating.
            log("SetFocus(\(app ?? "none")) refused: \(error)")
        case .failure(let error):
            retry(error)
        }
    }

    private func retry(_ error: VarlinkClientError) {
        log("SetFocus failed (\(error)); trying again")
        connection?.close()
        connection = nil
        tracker.forget(nowUSec: monotonicUSec())
    }

    private func setFocus(_ app: String?, reason: FocusTracker.Reason) -> Result<Void, VarlinkClientError> {
        do {
            if connection == nil {
                let c = try VarlinkClientConnection(path: socketPath)
                c.setTimeout(seconds: 5)
                connection = c
            }
            guard let connection else { return .success(()) }
            let call = ManagerWire.SetFocus(appId: app, reason: reason == .screenLocked ? .screenLocked : .compositorFocus)
            _ = try connection.call(ManagerMethod.setFocus.qualifiedName, call.json)
            return .success(())
        } catch {
            return .failure(error)
        }
    }
}

/// A NUL-terminated C buffer as a String.
func cString(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

func monotonicUSec() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
}

func log(_ text: String) {
    var line = Array("bgtaskd-focus: \(text)\n".utf8)
    _ = line.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
}
