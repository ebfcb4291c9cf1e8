import BGTaskConfig
import BGTaskCore
import BGTaskProtocol
import Dispatch
import Logging

/// SPEC §16: the daemon's energy accounts (the core's ``EnergyLedger``) and where they are kept.
final class EnergyAccounting: @unchecked Sendable {
    // @unchecked: used only on the daemon's queue.
    var ledger: EnergyLedger
    let store: EnergyStore?
    let logger: Logger

    init(stateDirectory: String?, queue: DispatchQueue, logger: Logger) {
        self.logger = logger
        guard let stateDirectory else {
            store = nil
            ledger = EnergyLedger()
            return
        }
        let store = EnergyStore(directory: stateDirectory, queue: queue)
        let (accounts, warnings) = store.load()
        for w in warnings { logger.warning("\(w)") }
        self.store = store
        ledger = EnergyLedger(accounts: accounts)
    }

    func save() {
        let logger = self.logger
        // Read when the save window ends (the ledger's accounts then), not copied at each save.
        store?.save(reading: { [self] in ledger.accounts }) { error in logger.warning("cannot save the energy accounts: \(error)") }
    }

    /// The last accounts, written before the daemon exits (a save's window would not end in time).
    func flush() {
        guard let store else { return }
        if let error = store.flush(ledger.accounts) { logger.warning("cannot save the energy accounts: \(error)") }
    }
}

extension DaemonService {
    /// SPEC §16: what decision `d` means for its app's energy account, measured now (before the decision's
    /// action is performed). Returns the CPU time of the background period a `suspend` ends, for the entry's
    /// `BGTASKD_BACKGROUND_CPU_USEC=`, and whether the accounts are to be saved. An app whose thaw waits
    /// for its events to be written has not run since its resume: the ledger needs no reading of it.
    func accountEnergy(_ d: Decision) -> (backgroundCPU: Int64?, save: Bool) {
        // Only decisions that change an app's state matter (not the grants and ends of the call path).
        guard let app = d.app, d.previousState != nil else { return (nil, false) }
        let now = clock.realtime()
        var used: Int64?
        let unrun = pendingThaws.contains { $0.0 == app }
        let measurement = energy.ledger.observe(d, at: now, unrunSinceResume: unrun)
        if let measurement {
            let layout = (freezer as? CgroupFreezer)?.layout
            let adopted = adoption?.hasInstances(app) == true
            let usage: Int64?
            if layout == nil, !adopted, let pid = d.pid, launcher.startedJustNow(pid) {
                // Its process was started a moment ago (an app that does not check in is launched into the
                // background at its spawn, and may be brought to the foreground by the next call): /proc
                // would read 0 ticks for it and anything it has forked since. Not read: no /proc walk at
                // such a launch. (A cgroup's usage is read: the cgroup may be an earlier run's, whose usage
                // goes on counting.)
                usage = 0
            } else {
                usage = EnergyMeter.usage(
                    cgroupPath: layout?.appPath(app.rawValue), mount: layout?.mount, pid: d.pid,
                    adopted: adopted ? adoption?.processes(app) ?? [] : [])
            }
            used = energy.ledger.measured(app, measurement, usage: usage, at: now)
        }
        let save = measurement == .periodEnds || d.kind == .resume || d.kind == .launch
        return (d.kind == .suspend ? used : nil, save)
    }

    /// The app's energy as `AppInfo.energy` shows it.
    func appEnergy(_ app: AppID) -> AppEnergy {
        energy.ledger.energy(of: app, at: clock.realtime())
    }
}

extension DaemonService {
    /// `AppInfo.energy`.
    func wireEnergy(_ app: AppID) -> ManagerWire.AppEnergy {
        let e = appEnergy(app)
        func counts(_ f: EnergyFigures) -> [String: Int64] {
            var out: [String: Int64] = [:]
            for (cause, n) in f.wakes { out[cause.rawValue] = n }
            return out
        }
        return ManagerWire.AppEnergy(
            backgroundCPUUSec: e.total.backgroundCPUUSec, backgroundCPU24hUSec: e.last24h.backgroundCPUUSec,
            wakes: counts(e.total), wakes24h: counts(e.last24h))
    }
}
