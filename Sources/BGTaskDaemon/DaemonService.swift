import BGTaskConfig
import BGTaskCore
import BGTaskProtocol
import BGTaskVarlink
import Dispatch
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Serves `io.bgtaskd.App` and `io.bgtaskd.Manager` on the daemon's queue: turns calls into the core's
/// inputs, performs the core's actions (deliver, launch, freeze, thaw, terminate, kill, reply), journals
/// every decision, and keeps the one timer armed for the core's next deadline.
final class DaemonService: VarlinkService, RefreshHost, @unchecked Sendable {
    // @unchecked: used only on `queue`.
    let queue: DispatchQueue
    private(set) var config: LoadedConfiguration
    let journal: JournalSink
    let logger: Logger
    let options: DaemonOptions
    weak var server: VarlinkServer? { didSet { denialBudget?.server = server } }
    var reloadHandler: (() -> Result<ReloadReport, LoadedConfiguration.LoadError>)?
    /// Why `freezer` is the backend in force (issue 12: said at start-up, in GetSettings and Stats).
    var freezerReason = ""
    /// `FreezerBackend=none`: decisions are journaled but not enforced.
    var dryRun: Bool { freezer.name == "none" }
    let startedUSec = Monotonic.nowUSec()

    var machine: LifecycleMachine
    private var timer: (any DispatchSourceTimer)?
    private var armedDeadline: Instant?
    let freezer: any Freezer
    let launcher: any AppLauncher
    /// Background App Refresh: policy, scheduled tasks, persistence (SPEC §5, §6).
    private(set) var refresh: RefreshController!

    /// Event streams: the CheckIn call of each connection that checked in.
    var streams: [ConnectionID: VarlinkRequest] = [:]
    var monitors: [ConnectionID: VarlinkRequest] = [:]
    /// Recent decisions per app that explain its state (StateCause; for Explain and status), newest last,
    /// packed (DecisionHistory.swift).
    var history: [AppID: DecisionHistory] = [:]
    static let historyLimit = 32
    /// The app's last decision when it is not a cause of its state (StateCause), for `lastDecision`.
    var lastNonCause: [AppID: DecisionRecord] = [:]
    var decisionCount = 0
    /// Launch/Foreground calls whose reply waits for the spawn's result (issue 12), by app.
    var launchReplies: [AppID: [VarlinkRequest]] = [:]
    /// Launch/Foreground requests whose `.ok` waits for the spawn their input caused, by request.
    var deferredLaunches: [RequestID: AppID] = [:]
    /// Manager holds (SPEC §12): the `Hold` call of each, open while the hold lives, by the request ID the
    /// core's `.holdLost` names.
    var holdCalls: [RequestID: VarlinkRequest] = [:]
    /// The PSI trigger (SPEC §8), for the log line of the core's response to it.
    weak var memoryPressure: MemoryPressureMonitor?
    /// Called once every app the daemon started has exited (SIGTERM, `stopApps`).
    var stopCompletion: (([AppID]) -> Void)?
    /// pid → app, for exit reports.
    var appByPid: [Int32: AppID] = [:]
    /// SPEC §13: apps started by others, adopted from their systemd cgroups (DaemonService+Adoption.swift).
    var adoption: AppAdoption?
    /// The uid of each app's `User=`, resolved at (re)registration: shown and journaled (`BGTASKD_UID`).
    var uidByApp: [AppID: UInt32] = [:]
    /// SPEC §11's journal budget (issue 11): which grant/end entries are journaled, which are counted.
    private(set) var journalBudget: JournalBudgetGate!
    /// The denial budget (issue 11): a caller refused too often is not read until the interval ends.
    private(set) var denialBudget: DenialBudgetGate!
    /// The call being handled (`handle(_:)`): a `deny` recorded meanwhile counts for its connection.
    var currentCall: VarlinkRequest?

    /// The clocks (tests step them by hand).
    let clock: DaemonClock
    /// Freezes performed and not yet done, by app: how many parts (the daemon's own freezer, the adopted
    /// instances) have still to report it. The core hears `freezeConfirmed` when none has.
    var freezesAwaited: [AppID: Int] = [:]
    /// SPEC §14: `/proc/locks` is read off this queue (a read can wait for an RCU grace period: the kernel
    /// takes `file_rwsem` for writing; tens of ms on a loaded machine) and the answer fed back. False: read
    /// on the queue, at once (the service tests, which step it synchronously).
    var lockReadsOffQueue = true
    /// Inputs facts cause while a feed is under way: fed when it is over (no feed inside a feed).
    private var feedDepth = 0
    private var factsAfterFeed: [Input] = []
    /// SPEC §14, system sleep (DaemonService+SystemSleep.swift): logind's inhibitors, the kernel wake lock,
    /// and what Stats says of them.
    var systemSleep: SystemSleepWatch?
    var sleepStatus = SystemSleepStatus()
    var wakeLock: KernelWakeLock?

    init(queue: DispatchQueue, config: LoadedConfiguration, journal: JournalSink, logger: Logger, options: DaemonOptions,
         freezer: any Freezer, launcher: (any AppLauncher)? = nil, clock: DaemonClock = .system,
         powerSupplyPath: String? = "/sys/class/power_supply")
    {
        self.queue = queue
        self.config = config
        self.journal = journal
        self.logger = logger
        self.options = options
        self.freezer = freezer
        self.clock = clock
        self.machine = LifecycleMachine(config: Self.lifecycleConfig(config, dryRun: freezer.name == "none"))
        self.launcher = launcher ?? Launcher(queue: queue)
        journalBudget = JournalBudgetGate(config: config.daemon, sink: journal, now: clock.monotonic)
        denialBudget = DenialBudgetGate(config: config.daemon, sink: journal, now: clock.monotonic)
        self.launcher.onExit = { [weak self] pid, status in self?.processExited(pid: pid, status: status) }
        freezer.onFrozen = { [weak self] app in self?.freezePartDone(app) }
        (freezer as? CgroupFreezer)?.onThawedExternally = { [weak self] app in self?.thawedExternally(app) }
        self.launcher.start()
        refresh = RefreshController(
            host: self, queue: queue, logger: logger, clock: clock, config: config, stateDirectory: options.stateDir,
            powerSupplyPath: powerSupplyPath)
        register(config.manifests)
        startAdoption()
    }

    /// Registers (or re-registers, keeping state) every manifest with the core, in app-id order, each with
    /// the uid its `User=` resolves to now (issue 13: a reload that changes `User=` changes who may call).
    private func register(_ manifests: [AppID: AppManifestFile]) {
        // Overwritten, not cleared: an app whose manifest went keeps its uid for its last decisions.
        var resolved: [Account?: UInt32] = [:]
        // App IDs are ASCII (A-Za-z0-9._-), where the bytes' order is String's `<`. Only the IDs are
        // sorted, compared in place: sorting the (ID, manifest) pairs with strcmp copied every manifest and
        // made a C string per comparison (14% of exec → first ListApps with 10,000 apps, perf).
        for id in manifests.keys.sorted(by: { $0.rawValue.utf8Precedes($1.rawValue) }) {
            guard let manifest = manifests[id] else { continue }
            let uid = resolved[manifest.user] ?? resolveUser(manifest.user)?.uid ?? getuid()
            resolved[manifest.user] = uid
            uidByApp[id] = uid
            if let m = LoadedConfiguration.coreManifest(manifest, exempt: config.exempt.contains(id), uid: uid) {
                feed(.appRegistered(m))
            }
        }
    }

    var interfaceDescriptions: [(name: String, description: String)] {
        [(Interfaces.appName, Interfaces.app), (Interfaces.managerName, Interfaces.manager)]
    }

    /// The core's configuration; a dry run (`FreezerBackend=none`) is the freezer's, fixed at start.
    static func lifecycleConfig(_ config: LoadedConfiguration, dryRun: Bool) -> LifecycleConfig {
        var lifecycle = config.lifecycle
        lifecycle.dryRun = dryRun
        return lifecycle
    }

    /// A new configuration (SIGHUP / Reload): timings for new deadlines, manifests added and removed.
    func apply(_ newConfig: LoadedConfiguration) {
        let old = config
        config = newConfig
        journalBudget.update(newConfig.daemon)
        denialBudget.update(newConfig.daemon)
        feed(.configurationChanged(Self.lifecycleConfig(newConfig, dryRun: dryRun)))
        register(newConfig.manifests)
        for id in old.manifests.keys.sorted() where newConfig.manifests[id] == nil {
            feed(.appUnregistered(id))
            // Instances others started were released by the core (thawed, app forgotten): no longer ours.
            if machine.app(id, now: now()) == nil { adoption?.release(id) }
        }
        adoption?.remap()
        adoptionSettingsChanged(from: old.daemon.apps)
        refresh.configurationChanged(newConfig)
        configureWakeLock()
    }

    /// SIGTERM: thaw every frozen app so that nothing stays frozen with nobody managing it.
    func shutdown() {
        journalBudget.close()
        freezer.thawAll()
        adoption?.thawAll()
        timer?.cancel()
        refresh.stop()
    }

    func connectionClosed(_ connection: VarlinkConnection) {
        let id = ConnectionID(connection.id)
        streams[id] = nil
        monitors[id] = nil
        holdCalls = holdCalls.filter { $0.value.connection.id != connection.id }
        // The core kills what is left of an app it spawned that now counts as gone (issue 13).
        feed(.connectionClosed(id))
    }

    // MARK: - Driving the core

    var nextRequestNumber: UInt64 = 0
    /// Requests fed to the core and not yet answered, by the ID its `.reply` echoes.
    var openRequests: [RequestID: VarlinkRequest] = [:]
    /// Holds back the reply of a request (see `run(_:for:answer:)`).
    var replyGates: [RequestID: (@escaping () -> Void) -> Void] = [:]
    /// Permission checks under way (`permitted`) and the core's verdicts on them.
    var checks: Set<RequestID> = []
    var verdicts: [RequestID: Reply] = [:]
    /// The request being fed: its caller is the peer of the decisions it causes (`BGTASKD_PEER_PID`).
    var feeding: (id: RequestID, peer: PeerCredentials)?

    func openRequest(_ request: VarlinkRequest) -> RequestID {
        nextRequestNumber += 1
        let id = RequestID(nextRequestNumber)
        openRequests[id] = request
        return id
    }

    /// Feeds a request's input and answers the request from the core's reply. `answer`, if given, gets the
    /// reply to send when it is ready (issue 11: a RunTaskNow is answered once the state file has it).
    func run(_ input: Input, for request: VarlinkRequest, answer gate: ((@escaping () -> Void) -> Void)? = nil) {
        let id = openRequest(request)
        if let gate { replyGates[id] = gate }
        feed(input, request: id)
        replyGates[id] = nil
        if let still = openRequests.removeValue(forKey: id), still.isOpen, !still.call.more {
            // Every request input yields one reply; this is a safety net for invariants.
            still.reply()
        }
    }

    /// Asks the core whether `request`'s caller may make it (issue 13: the core decides on the credentials
    /// and journals a denial); a refused request is failed here.
    func permitted(_ input: Input, _ request: VarlinkRequest) -> Bool {
        // issue 15: the common case, an App call its app's user (or root) may make, asks the core without
        // feeding it (no request, no reply, no actions); the core still decides, and a refusal is fed in
        // full below, so it is recorded and journaled as before.
        if case .appCallReceived(let app, _, let caller) = input, machine.allowsAppCall(app, caller: caller) {
            return true
        }
        let id = openRequest(request)
        checks.insert(id)
        feed(input, request: id)
        checks.remove(id)
        openRequests[id] = nil
        guard let verdict = verdicts.removeValue(forKey: id) else { return false }
        if case .ok = verdict { return true }
        send(verdict, to: request)
        return false
    }

    /// Feeds one input (and the inputs its actions cause), performs the actions, re-arms the timer.
    func feed(_ first: Input) { feed(first, request: nil) }

    /// The same for the input of a request: the core's reply names `request`.
    private func feed(_ first: Input, request: RequestID?) {
        let outer = feeding
        feeding = request.flatMap { id in openRequests[id].map { (id, $0.peer) } }
        feedDepth += 1
        defer {
            feeding = outer
            feedDepth -= 1
            if feedDepth == 0, !factsAfterFeed.isEmpty {
                let facts = factsAfterFeed
                factsAfterFeed.removeAll()
                for fact in facts { feed(fact) }
            }
        }
        // The inputs the actions cause (a spawn's result) follow the first; no array for the common case
        // of none (issue 15: nothing allocated per call that is not needed).
        var follows: [Input] = []
        var next = 0
        var input = first
        while true {
            let t = now()
            for action in machine.handle(input, now: t, request: next == 0 ? request : nil) {
                if let follow = perform(action) { follows.append(follow) }
            }
            switch input {
            case .appLaunched(let app, _): answerLaunch(app, failure: nil)
            case .launchFailed(let app, let message): answerLaunch(app, failure: message)
            default: break
            }
            guard next < follows.count else { break }
            input = follows[next]
            next += 1
        }
        if let request { deferredLaunches[request] = nil }
        armTimer()
    }

    /// Answers the Launch/Foreground calls waiting for `app`'s spawn.
    func answerLaunch(_ app: AppID, failure: String?) {
        guard let waiting = launchReplies.removeValue(forKey: app) else { return }
        for request in waiting {
            if let failure {
                request.fail(ManagerError.launchFailed(appId: app.rawValue, message: failure))
            } else {
                request.reply()
            }
        }
    }

    /// SIGTERM (SPEC §9): terminates every app this daemon started and calls `completion` when the core
    /// says the stop is over: all have exited, or (with those left) its time limit passed.
    func stopApps(completion: @escaping ([AppID]) -> Void) {
        stopCompletion = completion
        feed(.stopRequested)
    }

    func armTimer() {
        // In place (`peekNextDeadline` is mutating): reading `machine.nextDeadline` from this class copies
        // the whole machine, twice per call on the hot path (issue 15). No array either.
        let core = machine.peekNextDeadline()
        let deadline = Self.earliest(Self.earliest(core, journalBudget.nextDeadline), denialBudget.nextDeadline)
        guard let deadline else {
            if armedDeadline != nil {
                timer?.suspend()
                armedDeadline = nil
            }
            return
        }
        if deadline == armedDeadline { return }
        let delay = max(0, deadline.microseconds - now().microseconds)
        if timer == nil {
            let t = DispatchSource.makeTimerSource(flags: .strict, queue: queue)
            t.setEventHandler { [weak self] in
                guard let self else { return }
                self.armedDeadline = nil
                self.timer?.suspend()
                self.deadlineReached()
            }
            timer = t
            t.schedule(deadline: .now() + .microseconds(Int(delay)), leeway: .microseconds(50))
            t.resume()
        } else {
            timer?.schedule(deadline: .now() + .microseconds(Int(delay)), leeway: .microseconds(50))
            if armedDeadline == nil { timer?.resume() }
        }
        armedDeadline = deadline
    }

    /// After a system sleep (SPEC §14): the one timer is armed afresh for the next deadline, whichever
    /// clock libdispatch's timer counted the sleep on (early or late is harmless; this makes it prompt).
    func rearmTimer() {
        if armedDeadline != nil {
            timer?.suspend()
            armedDeadline = nil
        }
        armTimer()
    }

    /// The monotonic timer fired (early or late is harmless to both): the journal budget's interval end and
    /// the core's deadlines (tests call it by hand).
    func deadlineReached() {
        journalBudget.deadlineReached()
        denialBudget.deadlineReached()
        feed(.deadlineReached)
    }

    /// The earlier of two optional deadlines (no array on the per-call path).
    private static func earliest(_ a: Instant?, _ b: Instant?) -> Instant? {
        guard let a else { return b }
        guard let b else { return a }
        return min(a, b)
    }

    /// A part of an app's freeze (the freezer, the adopted instances) reports it done after `perform`
    /// found it not done; the last one tells the core.
    func freezePartDone(_ app: AppID) {
        guard let left = freezesAwaited[app] else { return }
        if left > 1 {
            freezesAwaited[app] = left - 1
            return
        }
        freezesAwaited[app] = nil
        feedFact(.freezeConfirmed(app))
    }

    /// Feeds a fact a component reported: now, or after the feed under way (no feed inside a feed).
    func feedFact(_ input: Input) {
        if feedDepth > 0 {
            factsAfterFeed.append(input)
        } else {
            feed(input)
        }
    }

    /// A process exited; the core says (`.release`) when its app has none left.
    private func processExited(pid: Int32, status: Int32?) {
        guard let app = appByPid.removeValue(forKey: pid) else { return }
        feed(.processExited(app, pid: pid))
    }

    func now() -> Instant { clock.monotonic() }

    /// The lifecycle core's facts about an app, for the refresh machine.
    func refreshFacts(_ app: AppID) -> RefreshAppFacts? {
        machine.app(app, now: now()).map {
            RefreshAppFacts(
                state: $0.state, lifecycleAware: $0.lifecycleAware, terminating: $0.terminating,
                runningTasks: Set($0.runningTasks.map(\.identifier)), waitingTasks: Set($0.waitingTasks))
        }
    }

}

/// Reads a whole (small) file, nil on any error.
func readFile(_ path: String) -> String? { FileIO.read(path) }

extension PeerCredentials {
    /// The core's view of a caller.
    var caller: Caller { Caller(pid: pid, uid: uid, gid: gid) }
}
