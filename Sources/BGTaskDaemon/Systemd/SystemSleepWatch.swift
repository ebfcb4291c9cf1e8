import CSystemd
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// SPEC §14, system sleep: logind over the system bus (libsystemd's sd-bus, `$DBUS_SYSTEM_BUS_ADDRESS`
/// honoured). Holds logind's `idle` inhibitor (mode `block`) while the core says live background work
/// exists, and a `sleep` delay inhibitor through which it sees `PrepareForSleep`.
///
/// The bus lives on a queue of its own (logind may be slow to answer; nothing here ever waits on the
/// daemon's queue): its fd is a Dispatch read source, `sd_bus_process` runs there, `sd_bus_get_timeout`
/// arms a timer, and every call is asynchronous. What happens is reported through `report`, on that queue.
final class SystemSleepWatch: @unchecked Sendable {
    // @unchecked: every field is used only on `busQueue`.
    enum Event: Sendable, Equatable {
        /// logind answered: the inhibitors are in force.
        case available
        /// No system bus, no logind on it, or the bus went away (said once).
        case unavailable(String)
        /// `PrepareForSleep(true)`: answer with ``sleepHandled()`` (the delay inhibitor goes).
        case preparingForSleep
        /// `PrepareForSleep(false)`: the system resumed (the delay inhibitor is taken again).
        case resumed
        /// logind refused an inhibitor (what, its error): tried again later for the sleep delay.
        case refused(String)
    }

    private enum State { case starting, available, off }
    private enum Kind { case idle(why: String), sleepDelay }

    /// One asynchronous Inhibit call, its reply's context (retained until the reply comes).
    private final class Pending {
        weak var watch: SystemSleepWatch?
        let kind: Kind
        init(_ watch: SystemSleepWatch, _ kind: Kind) {
            self.watch = watch
            self.kind = kind
        }
    }

    private let busQueue = DispatchQueue(label: "bgtaskd.logind")
    /// A refused sleep delay inhibitor is asked for again after this.
    static let retrySeconds = 5
    private let report: @Sendable (Event) -> Void
    private var state = State.starting
    private var bus: OpaquePointer?
    private var readSource: (any DispatchSourceRead)?
    private var writeSource: (any DispatchSourceWrite)?
    private var writeWatched = false
    private var timer: (any DispatchSourceTimer)?
    private var idleFD: Int32 = -1
    private var delayFD: Int32 = -1
    /// The `why` the idle inhibitor should carry; nil: none should be held.
    private var wantedIdle: String?
    /// The `why` of the inhibitor `idleFD` holds.
    private var heldIdle: String?
    /// An Inhibit call for the idle inhibitor is under way (at most one: the rest is coalesced).
    private var idleCallPending = false
    /// The release of the idle inhibitor, `idleLinger` after the last work ended.
    private var idleRelease: DispatchWorkItem?
    /// How long the idle inhibitor outlives the last work: an app that begins and ends tasks in a loop
    /// costs logind one Inhibit call, not one per task.
    static let idleLinger: DispatchTimeInterval = .seconds(1)

    /// Starts connecting at once; `report` is called on the watch's own queue.
    init(report: @escaping @Sendable (Event) -> Void) {
        self.report = report
        busQueue.async { [self] in start() }
    }

    /// Hold the idle inhibitor with this `why`, or release it (`nil`, after ``idleLinger``). A new `why`
    /// takes a new inhibitor before the old one is closed, so there is no gap.
    func inhibitIdle(_ why: String?) {
        busQueue.async { [self] in inhibitIdleNow(why) }
    }

    private func inhibitIdleNow(_ why: String?) {
        wantedIdle = why
        if why != nil {
            idleRelease?.cancel()
            idleRelease = nil
            takeIdle()
        } else if idleFD >= 0, idleRelease == nil {
            let release = DispatchWorkItem { [weak self] in
                guard let self else { return }
                self.idleRelease = nil
                if self.wantedIdle == nil { self.closeIdle() }
            }
            idleRelease = release
            busQueue.asyncAfter(deadline: .now() + Self.idleLinger, execute: release)
        }
    }

    /// The daemon has made its `system-sleep` decision: the sleep may go on.
    func sleepHandled() {
        busQueue.async { [self] in
            if delayFD >= 0 { close(delayFD) }
            delayFD = -1
        }
    }

    // MARK: - On busQueue

    private func start() {
        var b: OpaquePointer?
        let r = sd_bus_open_system(&b)
        guard r >= 0, let b else { return off("no system bus (\(String(cString: strerror(-r))))") }
        bus = b
        let me = Unmanaged.passUnretained(self).toOpaque()
        let m = sd_bus_match_signal_async(
            b, nil, "org.freedesktop.login1", "/org/freedesktop/login1", "org.freedesktop.login1.Manager",
            "PrepareForSleep", Self.prepareForSleep, nil, me)
        guard m >= 0 else { return off("cannot watch logind's PrepareForSleep (\(String(cString: strerror(-m))))") }
        let fd = sd_bus_get_fd(b)
        guard fd >= 0 else { return off("no system bus connection (\(String(cString: strerror(-fd))))") }
        let read = DispatchSource.makeReadSource(fileDescriptor: fd, queue: busQueue)
        read.setEventHandler { [weak self] in self?.process() }
        read.resume()
        readSource = read
        let write = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: busQueue)
        write.setEventHandler { [weak self] in self?.process() }
        writeSource = write
        let t = DispatchSource.makeTimerSource(queue: busQueue)
        t.setEventHandler { [weak self] in self?.process() }
        t.schedule(deadline: .distantFuture)
        t.resume()
        timer = t
        // The first answer says whether logind is there at all.
        takeDelay()
    }

    private func takeDelay() {
        inhibit("sleep", why: "bgtaskd records a decision before the system sleeps and checks its frozen apps after", mode: "delay", .sleepDelay)
    }

    private func takeIdle() {
        guard state == .available, !idleCallPending, let why = wantedIdle else { return }
        // Held already: a live set of apps that came back within the linger keeps its inhibitor.
        if idleFD >= 0, heldIdle == why { return }
        idleCallPending = true
        inhibit("idle", why: why, mode: "block", .idle(why: why))
    }

    private func inhibit(_ what: String, why: String, mode: String, _ kind: Kind) {
        guard let bus else { return }
        let pending = Unmanaged.passRetained(Pending(self, kind)).toOpaque()
        let r = bgtaskd_logind_inhibit_async(bus, nil, what, "bgtaskd", why, mode, Self.inhibitReply, pending)
        if r < 0 {
            Unmanaged<Pending>.fromOpaque(pending).release()
            if case .sleepDelay = kind, state == .starting {
                return off("cannot call logind (\(String(cString: strerror(-r))))")
            }
            return
        }
        // Not here: this may run inside sd_bus_process (a reply's callback), which must not recurse.
        busQueue.async { [weak self] in self?.process() }
    }

    private static let inhibitReply: sd_bus_message_handler_t = { message, userdata, _ in
        guard let userdata else { return 0 }
        let pending = Unmanaged<Pending>.fromOpaque(userdata).takeRetainedValue()
        pending.watch?.inhibitReplied(pending.kind, message)
        return 0
    }

    private static let prepareForSleep: sd_bus_message_handler_t = { message, userdata, _ in
        guard let userdata else { return 0 }
        let watch = Unmanaged<SystemSleepWatch>.fromOpaque(userdata).takeUnretainedValue()
        var sleeping: Int32 = 0
        guard bgtaskd_bus_read_bool(message, &sleeping) >= 0 else { return 0 }
        watch.prepareForSleep(sleeping != 0)
        return 0
    }

    private func inhibitReplied(_ kind: Kind, _ message: OpaquePointer?) {
        if sd_bus_message_is_method_error(message, nil) != 0 {
            let error = sd_bus_message_get_error(message)
            let name = error?.pointee.name.map { String(cString: $0) } ?? "an error"
            let text = error?.pointee.message.map { String(cString: $0) } ?? ""
            let why = name + (text.isEmpty ? "" : ": " + text)
            guard state != .starting else {
                guard case .sleepDelay = kind else { return }
                let absent = ["org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner"]
                off(absent.contains(name) ? "no logind on the system bus (\(why))"
                    : "logind refused bgtaskd's sleep delay inhibitor (\(why); without polkit logind allows inhibitors only to privileged callers)")
                return
            }
            switch kind {
            case .sleepDelay:
                report(.refused("the sleep delay inhibitor (\(why)); trying again in \(Self.retrySeconds) s"))
                busQueue.asyncAfter(deadline: .now() + .seconds(Self.retrySeconds)) { [weak self] in
                    guard let self, self.state == .available, self.delayFD < 0 else { return }
                    self.takeDelay()
                }
            case .idle:
                idleCallPending = false
                report(.refused("the idle inhibitor (\(why))"))
            }
            return
        }
        let fd = bgtaskd_bus_reply_fd(message)
        guard fd >= 0 else { return }
        switch kind {
        case .sleepDelay:
            if delayFD >= 0 { close(delayFD) }
            delayFD = fd
            if state == .starting {
                state = .available
                report(.available)
                takeIdle()
            }
        case .idle(let why):
            idleCallPending = false
            guard state == .available else {
                close(fd)
                return
            }
            // The new one first, then the old one goes: no gap. Work that ended meanwhile is released by
            // its linger (already armed for the old fd, armed here otherwise).
            closeIdle()
            idleFD = fd
            heldIdle = why
            if wantedIdle == nil {
                inhibitIdleNow(nil)
            } else {
                takeIdle()  // the why changed while the call was under way
            }
        }
    }

    private func prepareForSleep(_ sleeping: Bool) {
        guard state == .available else { return }
        if sleeping {
            report(.preparingForSleep)
        } else {
            takeDelay()
            report(.resumed)
        }
    }

    private func closeIdle() {
        if idleFD >= 0 { close(idleFD) }
        idleFD = -1
        heldIdle = nil
    }

    /// Dispatches what the bus has, then arms the timer and the write watch as sd-bus asks.
    private func process() {
        guard let bus, state != .off else { return }
        while true {
            let r = sd_bus_process(bus, nil)
            if r < 0 { return off("lost the system bus (\(String(cString: strerror(-r))))") }
            if r == 0 || state == .off { break }
        }
        var usec: UInt64 = 0
        if sd_bus_get_timeout(bus, &usec) >= 0, usec != UInt64.max {
            var ts = timespec()
            clock_gettime(CLOCK_MONOTONIC, &ts)
            let now = UInt64(ts.tv_sec) * 1_000_000 + UInt64(ts.tv_nsec) / 1000
            let delay = usec > now ? usec - now : 0
            timer?.schedule(deadline: .now() + .microseconds(Int(min(delay, 3_600_000_000))))
        } else {
            timer?.schedule(deadline: .distantFuture)
        }
        guard state != .off else { return }
        let wantsWrite = (sd_bus_get_events(bus) & Int32(POLLOUT)) != 0
        if wantsWrite != writeWatched {
            writeWatched = wantsWrite
            if wantsWrite { writeSource?.resume() } else { writeSource?.suspend() }
        }
    }

    /// Turns the watch off for good (said once through `report`); the bus is closed after the current
    /// `sd_bus_process` returns (this may run inside one of its callbacks).
    private func off(_ why: String) {
        guard state != .off else { return }
        state = .off
        closeIdle()
        if delayFD >= 0 { close(delayFD) }
        delayFD = -1
        report(.unavailable(why))
        busQueue.async { [self] in
            readSource?.cancel()
            if !writeWatched { writeSource?.resume() }
            writeSource?.cancel()
            timer?.cancel()
            readSource = nil
            writeSource = nil
            timer = nil
            if let bus { sd_bus_close_unref(bus) }
            bus = nil
        }
    }
}
