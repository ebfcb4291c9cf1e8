/// The Varlink interface descriptions bgtaskd serves (SPEC §10), as `GetInterfaceDescription` returns them.
public enum Interfaces: Sendable {
    public static let appName = "io.bgtaskd.App"
    public static let managerName = "io.bgtaskd.Manager"
    public static let serviceName = "org.varlink.service"

    public static let service = """
        # The Varlink Service Interface is provided by every varlink service. It
        # describes the service and the interfaces it implements.
        interface org.varlink.service

        # Get a list of all the interfaces a service provides and information
        # about the implementation.
        method GetInfo() -> (
          vendor: string,
          product: string,
          version: string,
          url: string,
          interfaces: []string
        )

        # Get the description of an interface that is implemented by this service.
        method GetInterfaceDescription(interface: string) -> (description: string)

        # The requested interface was not found.
        error InterfaceNotFound (interface: string)

        # The requested method was not found
        error MethodNotFound (method: string)

        # The interface defines the requested method, but the service does not
        # implement it.
        error MethodNotImplemented (method: string)

        # One of the passed parameters is invalid.
        error InvalidParameter (parameter: string)

        # Client is denied access
        error PermissionDenied ()

        # Method is expected to be called with 'more' set to true, but wasn't
        error ExpectedMore ()

        """

    public static let app = """
        # The calls an application makes about itself (SPEC §10). The caller's identity comes from
        # the socket's peer credentials (SO_PEERCRED), never from the request: appId names the app
        # and the caller must run as the app's manifest User= or as root.
        interface io.bgtaskd.App

        # A lifecycle event delivered on the CheckIn stream. Durations and times are microseconds;
        # deadlineUSec is on CLOCK_MONOTONIC.
        type Event (
          id: int,
          kind: string,
          state: string,
          needsAck: bool,
          taskId: ?int,
          taskName: ?string,
          identifier: ?string,
          name: ?string,
          payload: ?object,
          launchReason: ?string,
          deadlineUSec: ?int
        )

        # A pending scheduled task request (BGTaskRequest). earliestBeginUSec is wall-clock
        # (CLOCK_REALTIME) microseconds since the epoch.
        type TaskRequest (
          identifier: string,
          kind: string,
          earliestBeginUSec: ?int,
          requiresNetwork: bool,
          requiresExternalPower: bool
        )

        # Registers the calling process as the app and streams its events (call with more).
        # The first reply carries no event; every later one carries exactly one.
        method CheckIn(appId: string) -> (state: string, refreshStatus: string, event: ?Event)

        # Acknowledges an event that had needsAck set (did-enter-background, will-terminate).
        method Acknowledge(eventId: int) -> ()

        # Asks for background execution time. taskId 0 is the invalid identifier: denied.
        method BeginBackgroundTask(appId: string, name: ?string) -> (taskId: int)

        # SPEC §16: a continued task, begun by the user while the app is active: the app keeps running in
        # the background with no time budget for as long as it reports progress (UpdateTaskProgress) at
        # least every ContinuedTaskStallSec; EndBackgroundTask ends it. InvalidState unless active.
        method BeginContinuedTask(appId: string, identifier: string, title: string, subtitle: ?string, totalUnits: ?int) -> (taskId: int)
        method UpdateTaskProgress(appId: string, taskId: int, completedUnits: int, totalUnits: ?int, subtitle: ?string) -> ()

        # Ends an assertion. Ending an unknown or ended identifier is harmless.
        method EndBackgroundTask(appId: string, taskId: int) -> ()

        # Background time left; null in the foreground (unlimited).
        method BackgroundTimeRemaining(appId: string) -> (remainingUSec: ?int)

        # Starts an activity of a declared continuous background mode (audio, location, voip,
        # external-accessory, bluetooth).
        method BeginActivity(appId: string, mode: string) -> (activityId: int)

        method EndActivity(appId: string, activityId: int) -> ()

        # Submits a scheduled task request (kind: refresh or processing); replaces a pending
        # request with the same identifier.
        method SubmitTaskRequest(
          appId: string,
          identifier: string,
          kind: string,
          earliestBeginUSec: ?int,
          requiresNetwork: ?bool,
          requiresExternalPower: ?bool
        ) -> ()

        method CancelTaskRequest(appId: string, identifier: string) -> ()

        method CancelAllTaskRequests(appId: string) -> ()

        method PendingTaskRequests(appId: string) -> (requests: []TaskRequest)

        # Reports the end of a perform-task event's work.
        method CompleteTask(appId: string, identifier: string, success: bool) -> ()

        # restricted, denied or available.
        method RefreshStatus(appId: string) -> (status: string)

        error NoSuchApp (appId: string)
        error PermissionDenied ()
        error NotCheckedIn (appId: string)
        error AlreadyCheckedIn (appId: string)
        error NoSuchEvent (eventId: int)
        error NotPermitted (identifier: string)
        error TooManyPendingTaskRequests (kind: string)
        error Unavailable (reason: string)
        error ModeNotDeclared (mode: string)
        error ModeNotContinuous (mode: string)
        error InvalidState (state: string)

        """

    public static let manager = """
        # Shells, administrators and bgtaskctl (SPEC §10). Read-only methods are open to every
        # local user; the others need root or membership of ControlGroup=.
        interface io.bgtaskd.Manager

        type Assertion (
          taskId: int,
          appId: string,
          name: ?string,
          remainingUSec: ?int,
          expiring: bool,
          # A manager hold (Hold, bgtaskctl hold): no time budget.
          managerHold: ?bool
        )

        type Activity (
          activityId: int,
          appId: string,
          mode: string
        )

        # One recorded decision, as written to the journal.
        type Decision (
          realtimeUSec: int,
          appId: ?string,
          decision: string,
          reason: string,
          message: string
        )

        type AppInfo (
          appId: string,
          name: string,
          state: string,
          pid: ?int,
          uid: ?int,
          lifecycleAware: bool,
          assertions: []Assertion,
          activities: []Activity,
          refreshSetting: string,
          refreshStatus: string,
          backgroundTimeRemainingUSec: ?int,
          pendingTaskRequests: int,
          lastDecision: ?Decision,
          # Why refreshStatus is not available: restricted, refresh-disabled, low-power-mode, network-metered.
          refreshStatusReason: ?string,
          # When the app was last in the foreground (CLOCK_MONOTONIC; now while it is there).
          lastForegroundUSec: ?int,
          # What its background work cost (SPEC §16).
          energy: ?AppEnergy,
          # Its standby bucket (SPEC §16): active, working-set, frequent, rare, restricted.
          bucket: ?string
        )

        # Background CPU time (while not in the foreground) and background wakes by cause (task,
        # remote-notification, bus-call, lock, user), since accounting began (kept across restarts) and
        # over the last 24 hours.
        type AppEnergy (
          backgroundCPUUSec: int,
          backgroundCPU24hUSec: int,
          wakes: [string]int,
          wakes24h: [string]int
        )

        type Settings (
          backgroundAppRefresh: string,
          lowPowerMode: bool,
          onExternalPower: bool,
          network: string,
          freezerBackend: string,
          socket: string,
          didEnterBackgroundTimeoutUSec: int,
          backgroundTimeBudgetUSec: int,
          expirationWarningUSec: int,
          maxBackgroundTasksPerApp: int,
          launchTimeoutUSec: int,
          killTimeoutUSec: int,
          # Why this freezer backend is in force; dryRun: FreezerBackend=none, decisions are not enforced.
          freezerBackendReason: ?string,
          dryRun: ?bool
        )

        type DaemonStats (
          uptimeUSec: int,
          apps: int,
          connections: int,
          calls: int,
          decisions: int,
          liveAssertions: int,
          journalEntries: int,
          journalDropped: int,
          freezerBackend: ?string,
          freezerBackendReason: ?string,
          dryRun: ?bool,
          # What the journal budget did (SPEC §11): grant/end decisions counted in a summary instead of
          # journaled one by one, and the coalesced summaries journaled.
          journalCoalesced: ?int,
          journalSummaries: ?int,
          # What the connection limits did: connections refused (MaxConnectionsPerUser=, no descriptor
          # left for them), dropped for a message left half-sent (IncompleteMessageTimeoutSec=) or
          # closed for a message over MaxMessageSize.
          connectionsRefused: ?int,
          connectionsTimedOut: ?int,
          connectionsOversized: ?int,
          # What the denial budget did: connections not read until the interval's end after a call of
          # theirs was denied past JournalDenialBurst= (per uid) or JournalDenialGlobalBurst=.
          connectionsPaused: ?int,
          # System sleep (SPEC §14): logind or off, and why; whether logind's idle inhibitor is held now
          # (live background work); PrepareForSleep signals seen.
          systemSleep: ?string,
          systemSleepReason: ?string,
          idleInhibited: ?bool,
          sleepsSeen: ?int
        )

        method ListApps() -> (apps: []AppInfo)
        method GetApp(appId: string) -> (app: AppInfo)
        method ListAssertions() -> (assertions: []Assertion)
        method GetSettings() -> (settings: Settings)

        # Why the app is in its state, from the recorded decisions (newest last).
        # causes: sentences about what else keeps it there (refresh policy, low power mode, a dry run).
        method Explain(appId: string) -> (state: string, reasons: []Decision, causes: ?[]string)

        # Streams every decision as it happens (call with more).
        method Monitor() -> (decision: Decision)

        method Stats() -> (stats: DaemonStats)

        method Launch(appId: string, background: ?bool) -> ()
        method Foreground(appId: string, exclusive: ?bool) -> ()
        method Background(appId: string) -> ()

        # The compositor's front app (bgtaskd-focus): appId comes to the foreground and every other active
        # app goes to the background; none (null: the home screen, a locked screen) sends the active apps to
        # the background. reason: compositor-focus or screen-locked (the decisions' reason). An app with no
        # process known to bgtaskd is not launched for it.
        method SetFocus(appId: ?string, reason: string) -> ()
        method Interrupt(appId: string) -> ()
        method EndInterruption(appId: string) -> ()
        # userInitiated: the user closed the app (SPEC §16): no launch into the background for tasks or
        # remote notifications (deny, closed-by-user) until the user launches it again.
        method Terminate(appId: string, userInitiated: ?bool) -> ()
        method SetRefreshPolicy(appId: string, enabled: bool) -> ()

        # on, unmetered or off.
        method SetGlobalRefresh(mode: string) -> ()
        method SetLowPowerMode(enabled: bool) -> ()

        # network: none, metered or unmetered.
        method SetConditions(onExternalPower: ?bool, network: ?string) -> ()
        method PostNotification(name: string, appId: ?string, payload: ?object) -> ()
        method WakeForRemoteNotification(appId: string, payload: ?object) -> ()
        method RunTaskNow(appId: string, identifier: string) -> ()

        # A method call (member, from the unique bus name sender) addressed to the app on the session bus
        # (bgtaskd-focus): a suspended app is resumed into the background for BusCallBudgetSec (reason
        # bus-call) so that it can answer, then suspended again.
        method WakeForBusCall(appId: string, sender: string, member: string) -> ()

        # SPEC §16: the live continued tasks (user-visible work with progress), and the user's cancel of
        # one (its expiration handler runs; reason user-cancelled).
        type ContinuedTask (taskId: int, appId: string, identifier: string, title: string, subtitle: ?string, completedUnits: int, totalUnits: ?int)
        method ListContinuedTasks() -> (tasks: []ContinuedTask)
        method CancelContinuedTask(appId: string, taskId: int) -> ()

        # Re-reads configuration and manifests without dropping clients; a bad file is InvalidConfiguration
        # (the old configuration stays). applied: the bgtaskd.conf keys and manifests that changed and
        # are in force now; notApplied: "FILE:LINE: KEY: why" for each change that is not (a key read
        # only at start, in force until a restart).
        method Reload() -> (applied: ?[]string, notApplied: ?[]string)

        # A manager hold (SPEC §12), called with more: the first reply carries holdId; the hold keeps the
        # app running, without a time budget, until this connection closes. If the app is terminated
        # meanwhile, the call ends with HoldLost.
        method Hold(appId: string, name: ?string) -> (holdId: int)

        error NoSuchApp (appId: string)
        error PermissionDenied ()
        error NotPermitted (identifier: string)
        error Unavailable (reason: string)
        error InvalidState (state: string)
        error AlreadyCheckedIn (appId: string)
        error NotCheckedIn (appId: string)
        error ModeNotDeclared (mode: string)
        error InvalidConfiguration (message: string, file: ?string, line: ?int, key: ?string)
        error LaunchFailed (appId: string, message: string)
        error HoldLost (appId: string, reason: string, message: string)

        """

    /// Method names declared in an interface description (`method Name(`).
    public static func methodNames(in description: String) -> Set<String> {
        var names = Set<String>()
        for line in description.split(separator: "\n") {
            let t = line.drop(while: { $0 == " " })
            guard t.hasPrefix("method ") else { continue }
            let rest = t.dropFirst("method ".count)
            let name = rest.prefix(while: { $0.isLetter || $0.isNumber })
            if !name.isEmpty { names.insert(String(name)) }
        }
        return names
    }

    /// The interface name declared in a description (`interface a.b.c`).
    public static func interfaceName(in description: String) -> String? {
        for line in description.split(separator: "\n") {
            let t = line.drop(while: { $0 == " " })
            if t.hasPrefix("interface ") { return String(t.dropFirst("interface ".count)).trimmingSpaces() }
        }
        return nil
    }
}

extension String {
    func trimmingSpaces() -> String {
        String(self.drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }
}
