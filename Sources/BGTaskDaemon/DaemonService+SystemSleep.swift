import BGTaskConfig
import BGTaskCore
import Dispatch
import Logging

// SPEC §14, system sleep: the core says when live background work exists (`.inhibitIdle`); this performs
// it on logind (SystemSleepWatch) and the kernel wake lock, and feeds logind's PrepareForSleep back as the
// core's `systemSleepPreparing` / `systemResumed`.

/// What Stats says of system sleep.
struct SystemSleepStatus {
    /// `logind` once logind answered, else `off`.
    var mode = "off"
    var reason = "the daemon did not start the logind watch"
    /// The live work as the core last told it (nil: none).
    var live: IdleInhibition?
    var sleepsSeen = 0
    /// The journal said that system sleep is off (once).
    var offSaid = false
    /// What the watch was last told to hold (nil: nothing, or its release was told).
    var told: IdleInhibition?
    /// The release is waiting out ``SystemSleepWatch/idleLinger`` on the daemon's queue.
    var releaseArmed = false
    /// An update of the description is waiting out ``SystemSleepWatch/idleLinger`` on the daemon's queue.
    var updateArmed = false
    /// The kernel wake lock's release is waiting out ``SystemSleepWatch/idleLinger`` on the daemon's queue.
    var wakeReleaseArmed = false

    var idleInhibited: Bool { mode == "logind" && live != nil }
}

extension DaemonService {
    /// Starts watching logind (the daemon's start; unit tests build the service without it).
    func startSystemSleep() {
        sleepStatus.reason = "waiting for logind's answer on the system bus"
        configureWakeLock()
        let queue = self.queue
        let watch = SystemSleepWatch { [weak self] event in
            queue.async { [weak self] in self?.systemSleepEvent(event) }
        }
        systemSleep = watch
        if let live = sleepStatus.live {
            sleepStatus.told = live
            watch.inhibitIdle(SystemSleepWords.why(live))
        }
    }

    /// `KernelWakeLock=` at start and on reload; turned off while held, the lock is released.
    func configureWakeLock() {
        if config.daemon.kernelWakeLock {
            if wakeLock == nil { wakeLock = KernelWakeLock() }
            setWakeLock(sleepStatus.live != nil)
        } else if let lock = wakeLock {
            setWakeLock(false)
            if !lock.held { wakeLock = nil }
        }
    }

    /// The core's `.inhibitIdle`: live work began, changed apps, or ended.
    ///
    /// An app looping Begin/End, or many apps doing so, change the set of apps with live work on every call:
    /// the watch (its own queue, a thread hop) is told only what changes what logind should hold. The start of
    /// work is told at once; a changed set while held, and the end of all work, only after
    /// ``SystemSleepWatch/idleLinger`` (one timer each at a time), so such loops cost neither a hop nor the
    /// description's text per call.
    func inhibitIdle(_ live: IdleInhibition?) {
        sleepStatus.live = live
        holdWakeLock(live != nil)
        guard let watch = systemSleep else { return }
        if let live {
            guard sleepStatus.told != nil else {
                // Work began: held at once.
                sleepStatus.told = live
                return watch.inhibitIdle(SystemSleepWords.why(live))
            }
            // Held already: a changed set (which apps, how much) updates the description at most once per
            // linger, with the set as it is then.
            guard !sleepStatus.updateArmed, sleepStatus.told != live else { return }
            sleepStatus.updateArmed = true
            queue.asyncAfter(deadline: .now() + SystemSleepWatch.idleLinger) { [weak self] in
                guard let self else { return }
                self.sleepStatus.updateArmed = false
                guard let now = self.sleepStatus.live, self.sleepStatus.told != nil, self.sleepStatus.told != now else { return }
                self.sleepStatus.told = now
                self.systemSleep?.inhibitIdle(SystemSleepWords.why(now))
            }
        } else if sleepStatus.told != nil, !sleepStatus.releaseArmed {
            sleepStatus.releaseArmed = true
            queue.asyncAfter(deadline: .now() + SystemSleepWatch.idleLinger) { [weak self] in
                guard let self else { return }
                self.sleepStatus.releaseArmed = false
                guard self.sleepStatus.live == nil, self.sleepStatus.told != nil else { return }
                self.sleepStatus.told = nil
                self.systemSleep?.inhibitIdle(nil)
            }
        }
    }

    /// `KernelWakeLock=yes` as live work comes and goes: taken at once; released after
    /// ``SystemSleepWatch/idleLinger`` without live work, as logind's inhibitor is, so that an app looping
    /// Begin/End takes it once (each take and each release is an open, a write and a close of a sysfs file:
    /// six system calls per Begin/End pair otherwise). Released at once when the daemon stops
    /// (``releaseWakeLock()``) and when `KernelWakeLock=` is turned off.
    private func holdWakeLock(_ hold: Bool) {
        guard let lock = wakeLock else { return }
        if hold { return setWakeLock(true) }
        guard lock.held, !sleepStatus.wakeReleaseArmed else { return }
        sleepStatus.wakeReleaseArmed = true
        queue.asyncAfter(deadline: .now() + SystemSleepWatch.idleLinger) { [weak self] in
            guard let self else { return }
            self.sleepStatus.wakeReleaseArmed = false
            if self.sleepStatus.live == nil { self.setWakeLock(false) }
        }
    }

    /// The daemon stops: the kernel wake lock, which outlives the process that took it, is released now.
    func releaseWakeLock() { setWakeLock(false) }

    private func setWakeLock(_ hold: Bool) {
        guard let lock = wakeLock else { return }
        let before = lock.lastError
        if let error = lock.set(hold), error != before {
            logger.warning("KernelWakeLock=yes: \(error)")
        }
    }

    /// The core's `.verifyFrozen` after a resume: the freeze is applied again (idempotent for a frozen
    /// cgroup or a stopped process; it stops what something thawed around the sleep).
    func verifyFrozen(_ app: AppID, _ processes: Processes) {
        if processes.own { _ = freezer.freeze(app: app, pid: processes.pid) }
        if !processes.instances.isEmpty { _ = adoption?.freeze(app) }
    }

    func systemSleepEvent(_ event: SystemSleepWatch.Event) {
        switch event {
        case .available:
            sleepStatus.mode = "logind"
            sleepStatus.reason = "logind answers on the system bus: an idle inhibitor while background work is live, a sleep delay inhibitor"
            logger.info("system sleep: logind answers; live background work holds an idle inhibitor")
        case .unavailable(let why):
            sleepStatus.mode = "off"
            sleepStatus.reason = why
            guard !sleepStatus.offSaid else { return }
            sleepStatus.offSaid = true
            journal.send(
                "system sleep is off: \(why); idle sleep is not held off for background work and sleep is not seen",
                priority: .notice,
                fields: [JournalField(knownName: "MESSAGE_ID", MessageIDs.systemSleepOff)])
        case .preparingForSleep:
            sleepStatus.sleepsSeen += 1
            feed(.systemSleepPreparing)
            systemSleep?.sleepHandled()
        case .resumed:
            // First the watch's own check (an app thawed meanwhile is frozen again with a `thawed-externally`
            // decision), then the core's check of every app it holds frozen, which also covers apps the watch
            // cannot see (managed with signals).
            recheckFrozenApps()
            feed(.systemResumed)
            rearmTimer()
        case .refused(let what):
            logger.warning("logind refused \(what)")
        }
    }
}
