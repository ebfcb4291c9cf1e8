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
///
/// Stored `var`s are unchecked for exclusivity in release builds, as BGTaskVarlink's VarlinkConnection's
/// (which says why): the queue owns them.
final class DaemonService: VarlinkService, @unchecked Sendable {
    // @unchecked: used only on `queue`.
    let queue: DispatchQueue
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    private(set) var config: LoadedConfiguration
    let journal: JournalSink
    let logger: Logger
    let options: DaemonOptions
    weak var server: VarlinkServer?
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var reloadHandler: ((@escaping ReloadCompletion) -> Void)?
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Why `freezer` is the backend in force (issue 12: said at start-up, in GetSettings and Stats).
    var freezerReason = ""
    /// `FreezerBackend=none`: decisions are journaled but not enforced.
    var dryRun: Bool { freezer.name == "none" }
    let startedUSec = Monotonic.nowUSec()

    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// The one core (SPEC §17: every input it takes can be recorded): lifecycle and refresh machines, journal
    /// and denial budgets.
    var core: DaemonCore
    /// The lifecycle machine, to read (a copy: not on the per-call path).
    var machine: LifecycleMachine { core.lifecycle }
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var timer: (any DispatchSourceTimer)?
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var armedDeadline: Instant?
    /// Held for a turn of the Varlink server (`holdTimer()`): the timer is set once, at its end. Its own
    /// object, so that the server's turn hooks reach it without a weak reference to the service per turn.
    let timerHold = TimerHold()
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Times the timer was scheduled or suspended (tests).
    var timerSettings = 0
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// The one wall-clock timer (the core's wall deadline: DaemonService+Refresh.swift).
    var wallTimer: (any DispatchSourceTimer)?
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var armedWallDeadline: RealtimeInstant?
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// SPEC §17: the inputs the core took and its decisions, when `RecordInputs=yes`.
    var recording: InputRecorder?
    /// The heap a burst of inputs freed, given back once at rest after it (BurstTrim.swift).
    let burstTrim = BurstTrim()
    let freezer: any Freezer
    let launcher: any AppLauncher
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Background App Refresh's I/O: the state file and the power supply (SPEC §5, §6; the core decides).
    private(set) var refresh: RefreshController!

    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Event streams: the CheckIn call of each connection that checked in.
    var streams: [ConnectionID: VarlinkRequest] = [:]
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var monitors: [ConnectionID: VarlinkRequest] = [:]
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Recent decisions per app that explain its state (StateCause; for Explain and status), newest last,
    /// packed (DecisionHistory.swift).
    var history: [AppID: DecisionHistory] = [:]
    static let historyLimit = 32
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// The history's room for splitting a message, reused by every append.
    var historyScratch = DecisionHistory.Scratch()
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// The app's last decision when it is not a cause of its state (StateCause), for `lastDecision`.
    var lastNonCause: [AppID: DecisionRecord] = [:]
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var decisionCount = 0
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Launch/Foreground calls whose reply waits for the spawn's result (issue 12; the core's
    /// `.replyAwaitsLaunch`), by the request ID its `.answerLaunch` names.
    var launchReplies: [RequestID: VarlinkRequest] = [:]
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Manager holds (SPEC §12): the `Hold` call of each, open while the hold lives, by the request ID the
    /// core's `.holdLost` names.
    var holdCalls: [RequestID: VarlinkRequest] = [:]
    /// The PSI trigger (SPEC §8), for the log line of the core's response to it.
    weak var memoryPressure: MemoryPressureMonitor?
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Called once every app the daemon started has exited (SIGTERM, `stopApps`).
    var stopCompletion: (([AppID]) -> Void)?
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// pid → app, for exit reports.
    var appByPid: [Int32: AppID] = [:]
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// SPEC §13: apps started by others, adopted from their systemd cgroups (DaemonService+Adoption.swift).
    var adoption: AppAdoption?
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// The uid of each app's `User=`, resolved at (re)registration: shown and journaled (`BGTASKD_UID`).
    /// Only the uids other than the daemon's own are kept (most apps have no `User=`: 10,000 entries of
    /// the daemon's uid took 0.3 MiB); ``expectedUID(_:)`` falls back to it.
    var uidByApp: [AppID: UInt32] = [:]
    /// The daemon's own uid, read once (``expectedUID(_:)`` gave most journaled decisions a `getuid` call).
    let ownUID = getuid()
    /// SPEC §11's journal budget (issue 11) as Stats and the tests see it (the core decides).
    var journalBudget: JournalBudgetView {
        JournalBudgetView(coalesced: core.coalesced, summaries: core.summaries, nextDeadline: core.journalDeadline)
    }

    /// The clocks (tests step them by hand).
    let clock: DaemonClock
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// SPEC §15: the scene snapshots kept (checked PNGs), with their modification time (DaemonService+Snapshots.swift).
    var snapshotFiles: [AppID: [SceneID: Int64]] = [:]
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// SPEC §14: `/proc/locks` is read off this queue (a read can wait for an RCU grace period: the kernel
    /// takes `file_rwsem` for writing; tens of ms on a loaded machine) and the answer fed back. False: read
    /// on the queue, at once (the service tests, which step it synchronously).
    var lockReadsOffQueue = true
    /// The reads of `/proc/locks` off the queue, each serving every app waiting (DaemonService+Device.swift).
    lazy var lockReads = LockReads(queue: queue) { @Sendable [weak self] seen in
        for (app, observation) in seen { self?.feed(.locksObserved(app, observation)) }
    }
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Inputs facts cause while a feed is under way: fed when it is over (no feed inside a feed).
    var feedDepth = 0
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var factsAfterFeed: [CoreInput] = []
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Thaws waiting for the events they enable to be written, and those events' streams (+Thaw.swift).
    var pendingThaws: [(AppID, Processes)] = []
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var thawedStreams: [ConnectionID] = []
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Decisions recorded while a thaw waits, published after it (+Thaw.swift).
    var heldDecisions: [PublishedDecision] = []
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// SPEC §14, system sleep (DaemonService+SystemSleep.swift): logind's inhibitors, the kernel wake lock,
    /// and what Stats says of them.
    var systemSleep: SystemSleepWatch?
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var sleepStatus = SystemSleepStatus()
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var wakeLock: KernelWakeLock?
    /// SPEC §16: background CPU and wakes per app (Energy/EnergyAccounting.swift).
    lazy var energy = EnergyAccounting(stateDirectory: options.stateDir, queue: queue, logger: logger)

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
        let lifecycle = Self.lifecycleConfig(config, dryRun: freezer.name == "none")
        let (journalLimits, denialLimits) = Self.budgetLimits(config.daemon)
        let refreshConfig = RefreshController.refreshConfig(config)
        self.core = DaemonCore(lifecycle: lifecycle, journal: journalLimits, denial: denialLimits, refresh: refreshConfig)
        if config.daemon.recordInputs {
            recording = InputRecorder(start: core, maxBytes: config.daemon.recordMaxBytes)
        }
        self.launcher = launcher ?? Launcher(queue: queue)
        self.launcher.onExit = { [weak self] pid, status in self?.processExited(pid: pid, status: status) }
        freezer.onFrozen = { [weak self] app in self?.feedFact(.freezeChecked(app, .frozen)) }
        (freezer as? CgroupFreezer)?.onThawedExternally = { [weak self] app in self?.thawedExternally(app) }
        self.launcher.start()
        refresh = RefreshController(
            queue: queue, logger: logger, stateDirectory: options.stateDir, powerSupplyPath: powerSupplyPath
        ) { [weak self] onPower in self?.powerDetected(onPower) }
        feedRefresh(.stateLoaded(refresh.loaded))
        register(config.manifests)
        startAdoption()
        // Refresh starts once the service is built (apps registered): on the next turn of the queue.
        queue.async { [weak self] in
            guard let self else { return }
            self.feedRefresh(.started(detectedPower: self.refresh.start()))
        }
    }

    /// Registers (or re-registers, keeping state) every manifest with the core, in app-id order, each with
    /// the uid its `User=` resolves to now (issue 13: a reload that changes `User=` changes who may call).
    /// After a reload (`since` the configuration in force before it): only the apps whose registration
    /// differs from what the core has — a manifest in `changedApps` (added or changed), an exemption or a
    /// uid that changed; the core's registration of the same manifest again changes nothing.
    private func register(
        _ manifests: [AppID: AppManifestFile], since old: LoadedConfiguration? = nil, changedApps: Set<AppID> = []
    ) {
        // Overwritten, not cleared: an app whose manifest went keeps its uid for its last decisions.
        var resolved: [Account?: UInt32] = [:]
        var registered: [AppManifest] = []
        registered.reserveCapacity(old == nil ? manifests.count : changedApps.count)
        // App IDs are ASCII (A-Za-z0-9._-), where the bytes' order is String's `<`. Only the IDs are
        // sorted, by keys made once (`UTF8Order`), each with its index in the dictionary: its manifest is
        // then found without hashing.
        var order: [(AppID, Dictionary<AppID, AppManifestFile>.Index, UInt32)] = []
        order.reserveCapacity(old == nil ? manifests.count : changedApps.count)
        var last: (user: Account?, uid: UInt32)?  // the apps' users are mostly one (none: the daemon's)
        // Each manifest is read in place (`values[index].field`): a copy would retain its every string.
        let values = manifests.values
        for index in manifests.indices {
            let id = manifests.keys[index]
            let user = values[index].user
            let uid: UInt32
            if let last, last.user == user {
                uid = last.uid
            } else {
                uid = resolved[user] ?? resolveUser(user)?.uid ?? getuid()
                resolved[user] = uid
                last = (user, uid)
            }
            if let old, !changedApps.contains(id), uidByApp[id] ?? ownUID == uid,
                old.exempt.contains(id) == config.exempt.contains(id)
            {
                continue
            }
            uidByApp[id] = uid == ownUID ? nil : uid
            order.append((id, index, uid))
        }
        let exempt = config.exempt
        for k in UTF8Order.sortedIndices(order.map(\.0.rawValue)) {
            let (id, index, uid) = order[k]
            // The core's view of the manifest, read field by field in place (a copy would retain every
            // string); the key is `AppID(manifest.id)` (`loadApps`, `addDesktopApps`).
            registered.append(AppManifest(
                id: id, lifecycleAware: values[index].lifecycleAware, backgroundModes: values[index].backgroundModes,
                exempt: !exempt.isEmpty && exempt.contains(id), uid: uid))
        }
        // One input for all (recorded as one, SPEC §17): the core grows its app table once.
        if !registered.isEmpty { feed(.appsRegistered(registered)) }
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

    /// A new configuration (SIGHUP / Reload): timings for new deadlines, manifests added, changed
    /// (`changedApps`: added or differing from the ones in force) and removed.
    func apply(_ newConfig: LoadedConfiguration, changedApps: Set<AppID>) {
        let old = config
        config = newConfig
        let (journalLimits, denialLimits) = Self.budgetLimits(newConfig.daemon)
        feedCore(.budgetsConfigured(journal: journalLimits, denial: denialLimits))
        feed(.configurationChanged(Self.lifecycleConfig(newConfig, dryRun: dryRun)))
        register(newConfig.manifests, since: old, changedApps: changedApps)
        for id in old.manifests.keys.sorted() where newConfig.manifests[id] == nil {
            feed(.appUnregistered(id))
            // Instances others started were released by the core (thawed, app forgotten): no longer ours.
            if machine.app(id, now: now()) == nil { adoption?.release(id) }
        }
        adoption?.remap()
        adoptionSettingsChanged(from: old.daemon.apps)
        feedRefresh(.configurationChanged(RefreshController.refreshConfig(newConfig)))
        configureWakeLock()
    }

    /// SIGTERM: thaw every frozen app so that nothing stays frozen with nobody managing it.
    func shutdown() {
        feedCore(.stopping)
        freezer.thawAll()
        adoption?.thawAll()
        timer?.cancel()
        wallTimer?.cancel()
        wallTimer = nil
        refresh.stop()
        refresh.flush()
        energy.flush()
    }

    func connectionClosed(_ connection: VarlinkConnection) {
        let id = ConnectionID(connection.id)
        streams[id] = nil
        monitors[id] = nil
        holdCalls = holdCalls.filter { $0.value.connection.id != connection.id }
        // The core kills what is left of an app it spawned that now counts as gone (issue 13).
        feed(.connectionClosed(id))
    }

    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var nextRequestNumber: UInt64 = 0
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Requests fed to the core and not yet answered, by the ID its `.reply` echoes.
    var openRequests = OpenRequests<VarlinkRequest>()
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Permission checks under way (`permitted`) and the core's verdicts on them.
    var checks: Set<RequestID> = []
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var verdicts: [RequestID: Reply] = [:]

    /// A process exited; the core says (`.release`) when its app has none left.
    private func processExited(pid: Int32, status: Int32?) {
        guard let app = appByPid.removeValue(forKey: pid) else { return }
        feed(.processExited(app, pid: pid))
    }

    func now() -> Instant { clock.monotonic() }
}

/// Reads a whole (small) file, nil on any error.
func readFile(_ path: String) -> String? { FileIO.read(path) }

extension PeerCredentials {
    /// The core's view of a caller.
    var caller: Caller { Caller(pid: pid, uid: uid, gid: gid) }
}

/// Whether a turn of the Varlink server holds the monotonic timer's setting, and whether the core's next
/// deadline changed meanwhile (the timer is then set at the turn's end). Used on the daemon's queue only. Its
/// `var`s are unchecked for exclusivity in release builds, as DaemonService's.
final class TimerHold: @unchecked Sendable {
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var held = false
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var owed = false

    /// The turn ended: true if the timer is owed its setting now.
    func release() -> Bool {
        held = false
        defer { owed = false }
        return owed
    }
}
