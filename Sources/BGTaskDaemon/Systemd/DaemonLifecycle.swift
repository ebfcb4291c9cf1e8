/// bgtaskd's own start, reload and stop (SPEC §9) as a pure state machine, after swift-service-lifecycle's
/// `ServiceGroup`: one private `State` whose cases carry what is valid only in them, every transition
/// here, and an action for the shell (`Daemon`) to perform. No I/O, no clock.
///
/// Generic over what the shell holds so that tests use stand-ins: `Setup` is made on the queue first (the
/// freezer and why it is the one in force), `Serving` once the apps are registered (the service and the
/// server). Start-up has two independent halves, in either order: the signal sources are registered
/// (then READY=1) and the apps are registered; serving starts once both are done.
///
/// A reload has no state of its own: it runs within one turn of the queue.
struct DaemonLifecycle<Setup, Serving> {
    private enum State {
        /// Nothing made yet.
        case initial
        /// The freezer is made; the signal sources and the apps are being set up. A SIGHUP meanwhile
        /// reloads once the apps are registered.
        case starting(Setup, reloadPending: Bool)
        /// The signal sources are registered and READY=1 was sent; the apps are still being read
        /// (clients wait in the listening socket's backlog).
        case ready(Setup, reloadPending: Bool)
        /// The apps are registered; the signal sources are not yet, so serving waits for them.
        case registered(Serving, reloadPending: Bool)
        /// Serving clients.
        case running(Serving)
        /// SIGTERM/SIGINT: the apps the daemon started are being terminated; clients are still served.
        case stopping(Serving)
        /// Exiting.
        case finished
    }

    private var state = State.initial

    /// What the shell does once the signal sources are registered.
    enum SignalsRegisteredAction {
        /// Say the daemon started and send READY=1.
        case announceReady
        /// Say the daemon started, send READY=1, start serving; reload when a SIGHUP came meanwhile.
        case announceReadyAndServe(Serving, reload: Bool)
        /// Stopping or stopped already: nothing.
        case none
    }

    /// What the shell does once the apps are registered.
    enum AppsRegisteredAction {
        /// Start serving (READY=1 was sent); reload when a SIGHUP came meanwhile.
        case serve(Serving, reload: Bool)
        /// Serving waits for the signal sources.
        case waitForSignals
        /// Not starting (stopped already): the service is not used.
        case discard
    }

    /// What the shell does with a SIGHUP or a `Reload()` call.
    enum ReloadAction {
        /// Reload now with this service.
        case reload(Serving)
        /// The apps are not registered yet: reloaded once they are.
        case deferred
        /// Stopping: the configuration in force stays until exit.
        case ignored
    }

    /// What the shell does with a SIGTERM or SIGINT.
    enum StopAction {
        /// Send STOPPING=1 and terminate the apps the daemon started; `appsStopped()` follows.
        case stopApps(Serving)
        /// Send STOPPING=1 and exit now: nothing is served yet.
        case exit
        /// A stop is under way already: a second signal does not shorten it.
        case ignore
    }

    init() {}

    /// The freezer (`setup`) is made, on the queue, before the signal sources are installed.
    mutating func setupMade(_ setup: Setup) {
        guard case .initial = state else { return }
        state = .starting(setup, reloadPending: false)
    }

    /// The signal sources are registered.
    mutating func signalsRegistered() -> SignalsRegisteredAction {
        switch state {
        case .starting(let setup, let reloadPending):
            state = .ready(setup, reloadPending: reloadPending)
            return .announceReady
        case .registered(let serving, let reloadPending):
            state = .running(serving)
            return .announceReadyAndServe(serving, reload: reloadPending)
        case .initial, .ready, .running, .stopping, .finished:
            return .none
        }
    }

    /// The apps are read: `register` makes the service from the setup (called only while starting).
    mutating func appsLoaded(register: (Setup) -> Serving) -> AppsRegisteredAction {
        switch state {
        case .starting(let setup, let reloadPending):
            state = .registered(register(setup), reloadPending: reloadPending)
            return .waitForSignals
        case .ready(let setup, let reloadPending):
            let serving = register(setup)
            state = .running(serving)
            return .serve(serving, reload: reloadPending)
        case .initial, .registered, .running, .stopping, .finished:
            return .discard
        }
    }

    /// SIGHUP or `Reload()`.
    mutating func reloadRequested() -> ReloadAction {
        switch state {
        case .initial:
            return .deferred  // no signal source exists yet; here for completeness
        case .starting(let setup, _):
            state = .starting(setup, reloadPending: true)
            return .deferred
        case .ready(let setup, _):
            state = .ready(setup, reloadPending: true)
            return .deferred
        case .registered(let serving, _), .running(let serving):
            return .reload(serving)
        case .stopping, .finished:
            return .ignored
        }
    }

    /// SIGTERM or SIGINT.
    mutating func stopRequested() -> StopAction {
        switch state {
        case .initial, .starting, .ready:
            state = .finished
            return .exit
        case .registered(let serving, _), .running(let serving):
            state = .stopping(serving)
            return .stopApps(serving)
        case .stopping, .finished:
            return .ignore
        }
    }

    /// The apps the daemon started have exited (or their time is up): the service to shut down before
    /// exit, nil when no stop is under way.
    mutating func appsStopped() -> Serving? {
        guard case .stopping(let serving) = state else { return nil }
        state = .finished
        return serving
    }

    /// Whether the daemon has stopped.
    var isFinished: Bool {
        if case .finished = state { return true }
        return false
    }
}
