// The daemon's own freezer's part of a freeze (SPEC §9, §14): the freezer only reports a fact (`frozen`,
// `notYet`, `failed`); when to look again, when a freeze is late, and the fallback to SIGSTOP when the
// freezer cannot freeze are the core's. The time limit of a freeze stays the lifecycle machine's
// (`FreezeTimeoutSec`, LifecycleMachine+FreezeTimeout.swift).

/// What the daemon's own freezer found of an app's freeze (cgroup.events, /proc/PID/stat): a fact.
public enum FreezeFact: Hashable, Sendable, Codable {
    /// Every process is frozen or stopped (or there was none).
    case frozen
    /// Not yet: some process still runs.
    case notYet
    /// The freeze could not be made (`reason`: the write that failed and why).
    case failed(String)
}

/// The daemon's own freezer's part of one freeze under way.
struct OwnFreeze: Hashable, Sendable, Codable {
    /// The processes of the `.freeze`, and its `suspend` decision (the state, pid and budget of the app).
    var processes: Processes
    var held: Decision
    var started: Instant
    /// The freezer said `notYet` (or failed): its part is awaited, looked at again at `due`.
    var awaited = false
    var due: Instant?
    /// The delay before the last look (nil: none yet).
    var delay: TimeSpan?
    /// The core decided to stop the app with SIGSTOP instead (`freeze-fallback`).
    var fellBack = false
    /// The look that said the freeze is late (``DaemonCore/lateFreeze``) is out.
    var late = false
}

extension DaemonCore {
    /// The first look again after a freeze not done at once; each following one waits twice as long, up to
    /// ``maxFreezeCheck``; once late (``lateFreeze``), ``lateFreezeCheck`` apart. (The kernel gives no event
    /// for "a process that is not my child stopped"; the cgroup freezer's inotify watch reports sooner.)
    public static let firstFreezeCheck = TimeSpan.microseconds(500)
    public static let maxFreezeCheck = TimeSpan.microseconds(20_000)
    public static let lateFreezeCheck = TimeSpan.microseconds(100_000)
    /// A freeze not done after this is late: the look at it says so (the shell logs the processes that still
    /// run). A log line only: the time limit that decides is `FreezeTimeoutSec`.
    public static let lateFreeze = TimeSpan.microseconds(1_000_000)

    /// The earliest look due at a freeze under way (read after every feed: no array made for it).
    var nextFreezeCheck: Instant? {
        var earliest: Instant?
        for f in ownFreezes.values {
            if let due = f.due, earliest.map({ due < $0 }) ?? true { earliest = due }
        }
        return earliest
    }

    /// The lifecycle machine asked for a freeze: the own freezer's part starts now.
    mutating func freezeAsked(_ app: AppID, _ processes: Processes, _ held: Decision, now: Instant) {
        ownFreezes[app] = processes.own ? OwnFreeze(processes: processes, held: held, started: now) : nil
    }

    /// What the own freezer said right after the `.freeze`.
    mutating func freezerAnswered(_ app: AppID, _ fact: FreezeFact, now: Instant) {
        guard ownFreezes[app] != nil else { return }
        if fact == .frozen {
            ownFreezes[app] = nil
            return
        }
        ownFreezes[app]?.awaited = true
        freezeChecked(app, fact, now: now)
    }

    /// The own freezer's answer to a look (``CoreAction/checkFreeze(_:_:late:)``), or its report that the
    /// freeze is done (the cgroup freezer's inotify watch): done, look again later, fall back, or give up.
    mutating func freezeChecked(_ app: AppID, _ fact: FreezeFact, now: Instant) {
        guard var f = ownFreezes[app], f.awaited else { return }
        switch fact {
        case .frozen:
            ownFreezes[app] = nil
            partDone(app, now: now)
        case .notYet:
            let delay = f.late ? Self.lateFreezeCheck : f.delay.map { min($0 + $0, Self.maxFreezeCheck) } ?? Self.firstFreezeCheck
            f.delay = delay
            f.due = now + delay
            ownFreezes[app] = f
        case .failed(let error) where !f.fellBack:
            // The freezer could not freeze (a cgroup.freeze write failed): its processes are stopped with
            // SIGSTOP instead, a decision of its own.
            f.fellBack = true
            f.delay = nil
            f.due = nil
            ownFreezes[app] = f
            let d = Decision(
                kind: .policy, reason: .freezeFallback, app: app, state: f.held.previousState,
                remaining: f.held.remaining, pid: f.held.pid, severity: .warning, detail: .freezeFellBack(error: error))
            take(.record(d), from: nil, now: now)
            out.append(.freezeWithSignals(app, f.processes))
        case .failed(let error):
            // SIGSTOP failed too: the freeze is not made.
            ownFreezes[app] = nil
            feedLifecycle(.freezeFailed(app, error: error), now: now)
        }
    }

    /// The looks due at or before `now`, in the order of the apps.
    mutating func freezeChecksDue(now: Instant) {
        for app in ownFreezes.keys.sorted() {
            guard var f = ownFreezes[app], let due = f.due, due <= now else { continue }
            f.due = nil
            let late = !f.late && now - f.started >= Self.lateFreeze
            if late { f.late = true }
            ownFreezes[app] = f
            out.append(.checkFreeze(app, f.processes, late: late))
        }
    }
}
