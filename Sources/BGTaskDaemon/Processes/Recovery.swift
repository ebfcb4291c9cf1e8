import BGTaskCore
import Dispatch
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Start-up reconciliation (SPEC §9: "no app stays frozen with nobody managing it").
///
/// Policy: whatever a previous run left under `apps/` is **terminated**, not adopted. The new run has
/// no record of those apps' states, assertions, budgets or event streams, so adopting them would mean
/// guessing; terminating them is what §2 sequence 7 does to an app nobody can talk to:
/// - a cgroup left frozen (the app was suspended) is thawed and killed at once with `cgroup.kill`,
///   without events, as a suspended app is terminated;
/// - a cgroup left running gets SIGTERM to each of its processes, then `cgroup.kill` after
///   `KillTimeoutSec=` if any is still there (or at once if the app is launched again meanwhile);
/// - empty cgroups are removed.
/// Each app gets one journal entry, `BGTASKD_DECISION=terminate` `BGTASKD_REASON=daemon-restarted`,
/// saying what was found and what was done. A lifecycle-aware app that reconnects and checks in again
/// before its processes are gone is not saved by it: it is launched afresh when next needed.
extension CgroupFreezer {
    func recover() {
        let names = Cgroup.subdirectories(layout.apps)
        guard !names.isEmpty else { return }
        let now = Monotonic.nowUSec()
        for name in names {
            let path = layout.appPath(name)
            guard let events = Cgroup.events(path) else { continue }
            guard events.populated else {
                Cgroup.removeTree(path)
                logger.info("removed the empty cgroup \(path) left by a previous run")
                continue
            }
            let pids = Cgroup.procsRecursive(path)
            let wasFrozen = readFile(path + "/cgroup.freeze")?.hasPrefix("1") == true || events.frozen
            let list = pids.map(String.init).joined(separator: " ")
            // Nothing below stays frozen, whatever happens next.
            Cgroup.thawTree(path)
            watchForRemoval(name)
            if wasFrozen {
                Cgroup.kill(path)
                leftovers[name] = Leftover(pids: pids, wasFrozen: true, killAtUSec: nil)
                journalRecovery(
                    name, pids: pids, previousState: "suspended",
                    "bgtaskd restarted: \(name) was left frozen by the previous run with nobody managing it; "
                        + "thawed it and killed its \(pids.count) process(es) (\(list)) with cgroup.kill, without events")
            } else {
                for pid in pids { _ = Glibc.kill(pid, SIGTERM) }
                leftovers[name] = Leftover(pids: pids, wasFrozen: false, killAtUSec: now + killTimeoutUSec)
                journalRecovery(
                    name, pids: pids, previousState: nil,
                    "bgtaskd restarted: \(name) was left running by the previous run with nobody managing it; "
                        + "sent SIGTERM to its \(pids.count) process(es) (\(list)), cgroup.kill in \(killTimeoutUSec / 1000) ms")
            }
        }
        armLeftoverTimer()
        // Some may be gone already.
        for name in Array(leftovers.keys) where Cgroup.events(layout.appPath(name))?.populated != true {
            leftoverGone(name)
        }
    }

    /// A leftover cgroup is empty: forget it (its directory is removed by the watch for removal).
    func leftoverGone(_ name: String) {
        guard leftovers.removeValue(forKey: name) != nil else { return }
        logger.info("the processes \(name) had left from a previous run are gone", metadata: ["BGTASKD_APP": "\(name)"])
        remove(name)
        if leftovers.isEmpty {
            leftoverTimer?.cancel()
            leftoverTimer = nil
        }
    }

    /// The app is launched again while processes of the previous run are still in its cgroup.
    func killLeftoverNow(_ name: String, because why: String) {
        guard let leftover = leftovers.removeValue(forKey: name) else { return }
        let path = layout.appPath(name)
        if Cgroup.events(path)?.populated == true {
            Cgroup.kill(path)
            journalRecovery(
                name, pids: leftover.pids, previousState: nil,
                "killed what the previous run of bgtaskd left of \(name) with cgroup.kill: \(why)")
        }
    }

    private func armLeftoverTimer() {
        let deadlines = leftovers.values.compactMap(\.killAtUSec)
        guard let first = deadlines.min() else { return }
        let timer = leftoverTimer ?? DispatchSource.makeTimerSource(queue: queue)
        if leftoverTimer == nil {
            timer.setEventHandler { [weak self] in self?.leftoverDeadline() }
            timer.resume()
            leftoverTimer = timer
        }
        let delay = max(0, first - Monotonic.nowUSec())
        timer.schedule(deadline: .now() + .microseconds(Int(delay)), leeway: .milliseconds(5))
    }

    private func leftoverDeadline() {
        let now = Monotonic.nowUSec()
        for (name, leftover) in leftovers {
            guard let at = leftover.killAtUSec, at <= now else { continue }
            leftovers[name]?.killAtUSec = nil
            let path = layout.appPath(name)
            guard Cgroup.events(path)?.populated == true else {
                leftoverGone(name)
                continue
            }
            let still = Cgroup.procsRecursive(path)
            Cgroup.kill(path)
            journalRecovery(
                name, pids: still, previousState: nil,
                "\(name), left running by the previous run, did not exit within \(killTimeoutUSec / 1000) ms of SIGTERM: "
                    + "killed its \(still.count) process(es) (\(still.map(String.init).joined(separator: " "))) with cgroup.kill")
        }
        if leftovers.values.contains(where: { $0.killAtUSec != nil }) {
            armLeftoverTimer()
        } else {
            leftoverTimer?.cancel()
            leftoverTimer = nil
        }
    }

    private func journalRecovery(_ name: String, pids: [Int32], previousState: String?, _ message: String) {
        RestartJournal.record(logger, app: name, pids: pids, previousState: previousState, message)
    }
}

/// Journal entries for what a restart did to a previous run's apps, shaped like the core's decisions:
/// `BGTASKD_DECISION=terminate`, `BGTASKD_REASON=daemon-restarted`.
enum RestartJournal {
    static let reason = Reason.daemonRestarted.rawValue

    static func record(_ logger: Logger, app: String, pids: [Int32], previousState: String?, _ message: String) {
        var metadata: Logger.Metadata = [
            "BGTASKD_DECISION": "terminate",
            "BGTASKD_REASON": "\(reason)",
            "BGTASKD_APP": "\(app)",
        ]
        if let id = MessageIDs.byDecision["terminate"] { metadata["MESSAGE_ID"] = "\(id)" }
        if let previousState { metadata["BGTASKD_PREVIOUS_STATE"] = "\(previousState)" }
        if let pid = pids.first {
            metadata["BGTASKD_PID"] = "\(pid)"
            metadata["OBJECT_PID"] = "\(pid)"
        }
        logger.notice("\(message)", metadata: metadata)
    }
}
