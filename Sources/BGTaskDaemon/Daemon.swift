public import Dispatch
import BGTaskConfig
import BGTaskProtocol
import BGTaskVarlink
import Logging

#if canImport(Glibc)
import Glibc
import BGTaskCore
#endif
import CSystemd

/// Where the daemon finds its files (the flags of `bgtaskd`).
public struct DaemonOptions: Sendable {
    public var configDir = "/etc/bgtaskd"
    public var stateDir = "/var/lib/bgtaskd"
    public var runtimeDir = "/run/bgtaskd"
    /// Overrides `Socket=`.
    public var socketPath: String?
    /// Overrides `LauncherSocket=` (empty: spawn in-process).
    public var launcherSocketPath: String?

    public init() {}
}

/// The daemon process: wires the Varlink server, the service, systemd notification, signals and
/// the watchdog onto one serial queue. `run()` never returns.
public final class Daemon: @unchecked Sendable {
    // @unchecked: mutable state is touched only on `queue`.
    public let queue = DispatchQueue(label: "bgtaskd.state")
    /// Set on `queue`: tells whether code runs on it.
    static let stateQueueKey = DispatchSpecificKey<Bool>()
    let options: DaemonOptions
    let journal: JournalSink
    let notifier = Notifier()
    /// Start, reload and stop: the phase and what is valid in it (`DaemonLifecycle`). On `queue`.
    private var lifecycle = DaemonLifecycle<StartSetup, Serving>()
    /// The heap start-up freed and its code pages, given back once the first answer is out.
    private let startupCleanup = StartupCleanup()
    var signalSources: [any DispatchSourceSignal] = []
    /// issue 5: the PSI trigger of `[Memory] PressureKill=yes` (nil when off).
    var memoryPressure: MemoryPressureMonitor?
    var boundPath: String?
    let logger: Logger
    /// Counts the journal pauses, so that a pause's time limit only ends that pause.
    var journalPauses = 0
    /// The reloads under way and waiting (`Daemon+Reload.swift`). On `queue`.
    var reloads = ReloadRuns()
    /// How long clients wait for a congested journal at most: a journald that takes no entries must
    /// not stop the daemon serving. Past it, entries beyond the sink's queue are dropped and counted.
    static let journalPauseLimit: DispatchTimeInterval = .seconds(1)

    public init(options: DaemonOptions) {
        self.options = options
        let journal = JournalSink()
        self.journal = journal
        self.logger = Logger(label: "bgtaskd") { _ in JournalLogHandler(sink: journal) }
    }

    /// Loads configuration, starts serving, and parks the main thread in `dispatchMain()`.
    ///
    /// issue 15: start-up in two steps. bgtaskd.conf is read (a bad one refuses the start), the socket
    /// bound and the signal sources registered; then READY=1. The apps (ten thousand manifests take
    /// ~0.2 s) are read meanwhile on this thread, in parallel, and registered on the queue afterwards;
    /// only then does the socket thread take the listening socket. A client that connects after READY=1
    /// is accepted by the kernel (the backlog) and its calls are answered once every app is registered:
    /// no call ever sees some of the apps.
    public func run() -> Never {
        // One malloc arena for every thread: the daemon's work is serialized on one queue, and each further
        // arena (the start-up's parse threads, the socket thread) kept what it had freed: 43 MiB of
        // anonymous memory with 10,000 manifests after the first ListApps, 18 MiB with one (performance.md).
        mallopt(M_ARENA_MAX, 1)
        var config: LoadedConfiguration
        switch LoadedConfiguration.loadDaemon(from: options) {
        case .success(let c): config = c
        case .failure(let error):
            // Refuse to start: the message names file, line and key.
            writeStderr("bgtaskd: \(error)\n")
            exit(1)
        }
        for w in config.warnings { logger.warning("\(w)") }

        let fd: Int32
        if let passed = ListeningSocket.fromSystemd() {
            fd = passed
        } else {
            do {
                fd = try ListeningSocket.bind(path: config.socketPath)
                boundPath = config.socketPath
            } catch {
                writeStderr("bgtaskd: \(error)\n")
                exit(1)
            }
        }
        makeDirectories(options.stateDir, mode: 0o755)

        let daemonConfig = config
        queue.async { [self] in
            let (freezer, freezerReason) = makeFreezer(daemonConfig)
            lifecycle.setupMade(StartSetup(freezer: freezer, reason: freezerReason))
            let freezerName = freezer.name
            // READY=1 only once the signal sources are registered: a SIGTERM sent right after READY
            // must stop the daemon, not fall into the SIG_IGN set before registration.
            installSignalHandlers { [self] in
                let serve: (Serving, reload: Bool)?
                switch lifecycle.signalsRegistered() {
                case .none: return
                case .announceReady: serve = nil
                case .announceReadyAndServe(let serving, let reload): serve = (serving, reload)
                }
                let socket = boundPath ?? "the socket passed by systemd"
                let freezerText = "freezer backend \(freezerName): \(freezerReason)"
                logger.info("bgtaskd started, listening on \(socket); \(freezerText)")
                if freezerName == "none" {
                    logger.warning("FreezerBackend=none: a dry run; decisions are journaled but no app is frozen, thawed or killed")
                }
                notifier.ready(status: "Serving on \(boundPath ?? "socket-activated fd"); \(freezerText)")
                // issue 12: `make run` and any start from a terminal say it there too (under systemd
                // stderr is the journal, which already has it).
                if getenv("JOURNAL_STREAM") == nil {
                    writeStderr("bgtaskd: ready, listening on \(socket)\n")
                    writeStderr("bgtaskd: \(freezerText)\n")
                    if freezerName == "none" { writeStderr("bgtaskd: dry run: decisions are logged but not enforced\n") }
                }
                if let serve { startServing(serve.0, fd: fd, reload: serve.reload) }
            }
        }
        // The apps, here (not on the queue: it stays free for the signal sources and READY=1).
        // Unchanged manifests from the cache of the last start (ManifestCache); the new cache is written
        // off this path once the apps are handed to the queue.
        let cachePath = options.stateDir + "/" + ManifestCache.fileName
        var cacheUpdate = config.loadApps(from: options, cachePath: cachePath)
        let appWarnings = Array(config.warnings.dropFirst(daemonConfig.warnings.count))
        let loaded = config
        queue.async { [self] in
            for w in appWarnings { logger.warning("\(w)") }
            switch lifecycle.appsLoaded(register: { makeService(loaded, setup: $0) }) {
            case .serve(let serving, let reload): startServing(serving, fd: fd, reload: reload)
            case .waitForSignals, .discard: break
            }
        }
        if let update = cacheUpdate {
            cacheUpdate = nil  // the writer's alone: this frame lasts as long as the process
            writeManifestCacheInBackground(update, to: cachePath)
        }
        dispatchMain()
    }

    /// Made at start-up (on the queue, before READY=1): the freezer and why it is the one in force.
    struct StartSetup {
        let freezer: any Freezer
        let reason: String
    }

    /// Made once the apps are registered: what serves clients until exit.
    struct Serving {
        let service: DaemonService
        let server: VarlinkServer
        /// WATCHDOG=1 pings (nil when systemd asked for none).
        let watchdog: (any DispatchSourceTimer)?
    }

    /// The service and the server for `config` (with its apps), on the queue; serving starts once READY=1
    /// was sent too (`startServing`).
    private func makeService(_ config: LoadedConfiguration, setup: StartSetup) -> Serving {
        dispatchPrecondition(condition: .onQueue(queue))
        let service = DaemonService(
            queue: queue, config: config, journal: journal, logger: logger, options: options, freezer: setup.freezer)
        service.freezerReason = setup.reason
        service.removeStaleSnapshots()  // SPEC §15: once the apps still running are adopted again
        service.reloadHandler = { [weak self] done in
            if let self { self.reload(done) } else { done(.success(ReloadReport())) }
        }
        var limits = VarlinkLimits()
        limits.maxMessageSize = config.maxMessageSize
        limits.maxConnectionsPerUser = config.daemon.maxConnectionsPerUser  // issue 11
        limits.incompleteMessageTimeoutUSec = config.daemon.incompleteMessageTimeoutUSec
        // The cgroup freezer's kept `cgroup.freeze` descriptors are the daemon's own too.
        limits.reservedDescriptors += FreezeDescriptors.limit
        let server = VarlinkServer(queue: queue, service: service, limits: limits)
        service.server = server
        (service.freezer as? CgroupFreezer)?.watcher.readOnSocketThread(server)
        let timerHold = service.timerHold
        server.beforeTurn = { [journal, timerHold] in
            journal.holdWakeups()
            timerHold.held = true
        }
        server.afterTurn = { [journal, timerHold, weak service] in
            journal.releaseWakeups()
            if timerHold.release() { service?.armTimer() }
        }
        startupCleanup.arm(server: server, queue: queue)
        // Flow control: while journald cannot keep up, clients wait instead of decisions being lost.
        // Entries mostly come from this queue (decisions), where the pause takes effect before the
        // next call is served; the logger may send from elsewhere.
        queue.setSpecific(key: Self.stateQueueKey, value: true)
        journal.onCongestion({ [self] in
            if DispatchQueue.getSpecific(key: Self.stateQueueKey) == true {
                pauseForJournal(server)
            } else {
                queue.async { [self] in pauseForJournal(server) }
            }
        }, relieved: { [queue, server, journal] in
            // Congested again before this runs: stay paused until the next relief.
            queue.async { if !journal.isCongested { server.resumeIO() } }
        })
        service.startSystemSleep()  // SPEC §14
        updateMemoryPressure(config, service: service)  // issue 5
        return Serving(service: service, server: server, watchdog: startWatchdog())
    }

    /// Serving starts once both the signal sources are registered (the socket thread answers calls
    /// without libdispatch's event thread, so a client could otherwise be answered before
    /// SIGTERM/SIGHUP are taken: still SIG_IGN then, lost) and every app is registered. Connections
    /// made before wait in the listening socket's backlog. On the queue, when `lifecycle` says so;
    /// `reload`: a SIGHUP came before the apps were registered.
    private func startServing(_ serving: Serving, fd: Int32, reload: Bool) {
        dispatchPrecondition(condition: .onQueue(queue))
        serving.server.listen(fd: fd)
        if reload { self.reload() }
    }

    /// Stops serving clients while the journal is congested, for `journalPauseLimit` at most. On `queue`.
    private func pauseForJournal(_ server: VarlinkServer) {
        guard journal.isCongested else { return }
        server.pauseIO()
        journalPauses += 1
        let pause = journalPauses
        holdForJournal(pause, server: server)
    }

    /// Ends pause `pause` after `journalPauseLimit` unless essential entries (state changes, denials) still
    /// wait beyond what the sink holds: those are never dropped, so clients wait for journald (issue 11).
    private func holdForJournal(_ pause: Int, server: VarlinkServer) {
        queue.asyncAfter(deadline: .now() + Self.journalPauseLimit) { [self] in
            guard pause == journalPauses, server.ioPaused, journal.isCongested else { return }
            if journal.mustHoldClients { return holdForJournal(pause, server: server) }
            logger.warning("journald took no entries for 1 s: serving clients again; entries that do not fit in the journal queue are dropped and counted (Stats journalDropped)")
            server.resumeIO()
        }
    }

    /// The freezer backend `FreezerBackend=` asks for, and why it is the one in force; `auto` takes the
    /// cgroup freezer when the cgroup v2 subtree is writable, else signals.
    private func makeFreezer(_ config: LoadedConfiguration) -> (any Freezer, String) {
        // issue 5: processes a previous run left stopped with SIGSTOP are reconciled first (whatever
        // the backend now); the cgroup freezer reconciles its own subtree in `make`.
        let stopped = StoppedProcessRecords(directory: options.runtimeDir + "/stopped", logger: logger)
        stopped.recover()
        switch config.daemon.freezerBackend {
        case .none:
            return (NoFreezer(), "FreezerBackend=none (dry run: decisions are not enforced)")
        case .signal:
            return (SignalFreezer(queue: queue, logger: logger, records: stopped), "FreezerBackend=signal (SIGSTOP/SIGCONT)")
        case .cgroup, .auto:
            var why = ""
            if let cgroup = CgroupFreezer.make(config: config, logger: logger, queue: queue, stopped: stopped, why: &why) {
                return (cgroup, "FreezerBackend=\(config.daemon.freezerBackend.rawValue): \(why)")
            }
            let reason = "FreezerBackend=\(config.daemon.freezerBackend.rawValue) but no usable cgroup v2 subtree (\(why)): SIGSTOP/SIGCONT instead"
            logger.warning("\(reason)")
            return (SignalFreezer(queue: queue, logger: logger, records: stopped), reason)
        }
    }

    /// issue 5: starts, restarts or stops the memory-pressure trigger for `config` (SPEC §8); its
    /// triggers become the core's `memoryPressureTriggered` input (the core decides to warn or reclaim).
    private func updateMemoryPressure(_ config: LoadedConfiguration, service: DaemonService) {
        let cgroupPressure = (service.freezer as? CgroupFreezer).map { $0.layout.apps + "/memory.pressure" }
        memoryPressure = MemoryPressureMonitor.reconfigure(
            memoryPressure, config: config.daemon, cgroupPressure: cgroupPressure, queue: queue, logger: logger
        ) { [weak service] input in service?.feed(input) }
        service.memoryPressure = memoryPressure
    }

    /// Installs the signal sources; `registered` runs on the queue once all of them are registered.
    private func installSignalHandlers(registered: @escaping @Sendable () -> Void) {
        let group = DispatchGroup()
        for sig in [SIGTERM, SIGINT, SIGHUP] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler { [weak self] in
                guard let self else { return }
                if sig == SIGHUP { self.reload() } else { self.stop(signal: sig) }
            }
            group.enter()
            source.setRegistrationHandler { group.leave() }
            source.resume()
            signalSources.append(source)
        }
        signal(SIGPIPE, SIG_IGN)
        group.notify(queue: queue, execute: registered)
    }

    /// Sends WATCHDOG=1 from the state queue, so a stalled queue stops the pings and systemd notices.
    private func startWatchdog() -> (any DispatchSourceTimer)? {
        guard let usec = notifier.watchdogUSec else { return nil }
        let interval = DispatchTimeInterval.microseconds(Int(usec / 2))
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(50))
        let notifier = self.notifier
        timer.setEventHandler { notifier.watchdog() }
        timer.resume()
        return timer
    }

    /// SIGHUP / Reload: re-read configuration without dropping clients; keep the old one on error, which
    /// `done` gets (for `Reload()`'s error reply); else what was applied and what needs a restart. The files
    /// are read off the queue (`Daemon+Reload.swift`), which serves calls meanwhile; `done` runs on the queue.
    func reload(_ done: @escaping ReloadCompletion = { _ in }) {
        dispatchPrecondition(condition: .onQueue(queue))
        switch lifecycle.reloadRequested() {
        case .reload(let serving):
            reloads.waiting.append(done)
            if !reloads.reading { startReload(inForce: serving.service.config) }
        case .deferred:
            // issue 15: a SIGHUP during start-up, before the apps are registered, reloads once they are.
            done(.success(ReloadReport()))
        case .ignored:
            done(.success(Self.reloadIgnored(logger)))
        }
    }

    /// Reads the files for the reloads waiting, off the queue, then applies them on it (`finishReload`).
    private func startReload(inForce: LoadedConfiguration) {
        let waiting = reloads.waiting
        reloads.waiting = []
        reloads.reading = true
        notifier.reloading()
        let read = Self.readForReload(options, inForce: inForce)
        let started = runOnBackgroundThread(nice: nil) { [self] in
            let loaded = read()
            queue.async { [self] in finishReload(loaded, waiting) }
        }
        if !started { finishReload(read(), waiting) }  // no thread to be had: read here
    }

    /// Applies what a reload read, unless the daemon began stopping meanwhile; reads again for the reloads
    /// asked for while this one read (the files may have changed since it began).
    private func finishReload(_ loaded: ReadForReload, _ waiting: [ReloadCompletion]) {
        dispatchPrecondition(condition: .onQueue(queue))
        reloads.reading = false
        guard case .reload(let serving) = lifecycle.reloadRequested() else {
            let ignored = Self.reloadIgnored(logger)
            for done in waiting + reloads.waiting { done(.success(ignored)) }
            reloads.waiting = []
            return
        }
        let result = apply(loaded, to: serving)
        if case .success = result, let cache = loaded.cacheUpdate {
            writeManifestCacheInBackground(cache, to: loaded.cachePath)
        }
        for done in waiting { done(result) }
        if !reloads.waiting.isEmpty { startReload(inForce: serving.service.config) }
    }

    /// Applies what a reload read (and compared with the configuration in force) to `serving`'s service and
    /// server.
    private func apply(_ loaded: ReadForReload, to serving: Serving) -> Result<ReloadReport, LoadedConfiguration.LoadError> {
        let service = serving.service
        switch loaded.configuration {
        case .success(let config):
            for w in config.warnings { logger.warning("\(w)") }
            let done = loaded.report
            service.apply(config, changedApps: loaded.changedApps)
            let server = serving.server
            server.limits.maxConnectionsPerUser = config.daemon.maxConnectionsPerUser  // issue 11
            server.limits.incompleteMessageTimeoutUSec = config.daemon.incompleteMessageTimeoutUSec
            server.limits.maxMessageSize = config.maxMessageSize  // connections accepted from now on
            updateMemoryPressure(config, service: service)  // issue 5
            for note in done.notApplied { logger.warning("reload: \(note)") }
            if done.notApplied.isEmpty {
                logger.info("configuration reloaded\(done.applied.isEmpty ? " (nothing changed)" : ": " + done.applied.joined(separator: ", "))")
                notifier.ready(status: "Serving (configuration reloaded)")
            } else {
                logger.warning("configuration reloaded in part: \(done.notApplied.count) change(s) need a restart")
                notifier.ready(status: "Serving (configuration reloaded; a restart is needed to apply \(done.notApplied.count) change(s))")
            }
            return .success(done)
        case .failure(let error):
            logger.error("reload failed, keeping the previous configuration: \(error)")
            notifier.ready(status: "Serving (reload failed: \(error))")
            return .failure(error)
        }
    }

    /// SIGTERM/SIGINT (SPEC §9): terminate the apps this daemon started (will-terminate, SIGTERM, SIGKILL
    /// after KillTimeoutSec), thaw whatever is left frozen, then stop. Clients are served meanwhile (an
    /// app answers will-terminate on its stream); a second signal does not shorten the sequence.
    private func stop(signal sig: Int32) {
        dispatchPrecondition(condition: .onQueue(queue))
        let action = lifecycle.stopRequested()
        if case .ignore = action { return }
        notifier.stopping()
        logger.info("stopping on signal \(sig)")
        guard case .stopApps(let serving) = action else { return finishStop(nil) }
        let service = serving.service
        let onTerminal = getenv("JOURNAL_STREAM") == nil
        let started = service.lifecycle.appsStartedByDaemon
        if onTerminal {
            writeStderr("bgtaskd: stopping on signal \(sig)"
                + (started.isEmpty ? "\n" : ": terminating the \(started.count) app\(started.count == 1 ? "" : "s") it launched\n"))
        }
        service.stopApps { [weak self] left in
            guard let self else { return }
            if !left.isEmpty {
                let dry = service.dryRun ? " (dry run: FreezerBackend=none, left running)" : ""
                logger.warning("stopping with apps whose exit was not seen\(dry): \(left.map(\.rawValue).joined(separator: ", "))")
            }
            if let serving = lifecycle.appsStopped() { finishStop(serving) }
        }
    }

    /// Shuts down what serves (nil: nothing served yet) and exits.
    private func finishStop(_ serving: Serving?) {
        if getenv("JOURNAL_STREAM") == nil { writeStderr("bgtaskd: stopped\n") }
        serving?.service.shutdown()
        serving?.server.shutdown()
        if let boundPath { unlink(boundPath) }
        journal.flush()
        finishManifestCacheWrite()
        exit(0)
    }
}

func writeStderr(_ text: String) { FileIO.write(text) }
