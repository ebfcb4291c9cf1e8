/// How the daemon stops and resumes apps (`[Daemon] FreezerBackend=`).
public enum FreezerBackend: String, CaseIterable, Hashable, Sendable {
    /// `cgroup` when the delegated cgroup v2 subtree is writable, else `signal`.
    case auto
    /// `cgroup.freeze` / `cgroup.kill` on each app's cgroup v2 leaf.
    case cgroup
    /// SIGSTOP / SIGCONT to every process of the app.
    case signal
    /// Decide and log only (dry run).
    case none
}

/// The global Background App Refresh setting (`[Refresh] BackgroundAppRefresh=`).
public enum BackgroundAppRefreshMode: String, CaseIterable, Hashable, Sendable {
    /// Refresh allowed.
    case on
    /// Refresh allowed only while the network is not metered (iOS's "Wi-Fi").
    case unmetered
    /// Refresh disabled for every app.
    case off
}

/// The settings of `bgtaskd.conf` and its drop-ins (SPEC §9). Times are microseconds.
///
/// `DaemonConfig()` holds the defaults.
public struct DaemonConfig: Hashable, Sendable {
    // [Daemon]
    /// `Socket=`: path of the Varlink socket.
    public var socket: String = "/run/bgtaskd/io.bgtaskd"
    /// `ControlGroup=`: group whose members may call the control methods of `io.bgtaskd.Manager`
    /// (nil: root only).
    public var controlGroup: Account? = nil
    /// `FreezerBackend=`.
    public var freezerBackend: FreezerBackend = .auto
    /// `CgroupRoot=`: directory in the cgroup2 file system under which apps get their cgroups
    /// (nil: the daemon's own delegated cgroup).
    public var cgroupRoot: String? = nil
    /// `LauncherSocket=`: socket of bgtaskd-launcher, which starts apps for the daemon (privilege
    /// separation); nil: the daemon starts apps itself.
    public var launcherSocket: String? = nil
    /// `MaxMessageSize=`: largest Varlink message accepted, in bytes; a larger one closes the connection.
    public var maxMessageSize: Int = 64 * 1024
    /// `MaxConnectionsPerUser=`: connections one uid may hold open at once (root exempt); more are
    /// refused (issue 11).
    public var maxConnectionsPerUser: Int = 128
    /// `IncompleteMessageTimeoutSec=`: a connection that began a message and has not completed it within
    /// this is closed (issue 11). Idle connections are not affected.
    public var incompleteMessageTimeoutUSec: Int64 = 10 * second
    /// `KernelWakeLock=`: while live background work holds logind's idle inhibitor (SPEC §14), also hold
    /// the kernel wake lock `bgtaskd` (`/sys/power/wake_lock`), for autosleep devices.
    public var kernelWakeLock: Bool = false
    /// `RecordInputs=` (SPEC §17): record every input the core takes, with its times and the decisions
    /// it took, in a ring in memory that keeps the most recent (`bgtaskctl record`). Read only at start.
    public var recordInputs: Bool = true
    /// `RecordMaxBytes=`: how much memory the recorded inputs may take; the ring lets the oldest half go
    /// when the newest half is full (the checkpoints of the core it replays from are not counted). Read only at start.
    public var recordMaxBytes: Int = 16 * 1024 * 1024

    // [Lifecycle]
    /// `DidEnterBackgroundTimeoutSec=`: time to acknowledge `did-enter-background` (and the grace window of
    /// apps that are not lifecycle-aware).
    public var didEnterBackgroundTimeoutUSec: Int64 = 5 * second
    /// `BackgroundTimeBudgetSec=`: background execution time per app, shared by its assertions.
    public var backgroundTimeBudgetUSec: Int64 = 30 * second
    /// `ExpirationWarningSec=`: how long before a budget ends `background-task-will-expire` is sent.
    public var expirationWarningUSec: Int64 = 5 * second
    /// `MaxBackgroundTasksPerApp=`: live assertions per app.
    public var maxBackgroundTasksPerApp: Int = 64
    /// `LaunchTimeoutSec=`: time a launched lifecycle-aware app has to call `CheckIn`.
    public var launchTimeoutUSec: Int64 = 20 * second
    /// `WillTerminateTimeoutSec=`: time to exit after `will-terminate`, before SIGTERM.
    public var willTerminateTimeoutUSec: Int64 = 5 * second
    /// `KillTimeoutSec=`: time between SIGTERM and SIGKILL.
    public var killTimeoutUSec: Int64 = 5 * second
    /// `RefreshTaskBudgetSec=`: run time of a refresh task or a remote-notification wake.
    public var refreshTaskBudgetUSec: Int64 = 30 * second
    /// `ProcessingTaskBudgetSec=`: run time of a processing task.
    public var processingTaskBudgetUSec: Int64 = 5 * 60 * second
    /// `BusCallBudgetSec=`: run time of a suspended app woken for a method call on the session bus (SPEC §14).
    public var busCallBudgetUSec: Int64 = 5 * second
    /// `LockRecheckSec=` (SPEC §14): how often a suspension deferred for a contended lock is tried again, and
    /// how often the locks of a frozen app that holds any are looked at.
    public var lockRecheckUSec: Int64 = 1 * second
    /// `LockDeferralSec=`: an app still holding a lock others wait for this long after it was seen is terminated.
    public var lockDeferralUSec: Int64 = 10 * second
    /// `FreezeTimeoutSec=`: a freeze not confirmed within this is abandoned (the app thawed, `freeze-timeout`).
    public var freezeTimeoutUSec: Int64 = 2 * second
    /// `FreezeRetrySec=`: when an abandoned freeze is tried again.
    public var freezeRetryUSec: Int64 = 30 * second
    /// `SnapshotTimeoutSec=` (SPEC §15): how long an app's scene snapshots are waited for before its freeze.
    public var snapshotTimeoutUSec: Int64 = 1 * second
    /// `SnapshotMaxBytes=`: a scene snapshot larger than this is deleted.
    public var snapshotMaxBytes: Int64 = 8 * 1024 * 1024
    /// `ContinuedTaskStallSec=` (SPEC §16): a continued task that reports no progress this long expires.
    public var continuedTaskStallUSec: Int64 = 30 * second

    // [Refresh]
    /// `BackgroundAppRefresh=`: the global refresh setting at start (run-time changes persist elsewhere).
    public var backgroundAppRefresh: BackgroundAppRefreshMode = .on
    /// `DefaultAppRefresh=`: per-app refresh setting of apps whose manifest does not set one.
    public var defaultAppRefresh: Bool = true
    /// `MinimumRefreshIntervalSec=`: least time between two refreshes of one app.
    public var minimumRefreshIntervalUSec: Int64 = 15 * 60 * second
    /// `ProcessingIdleSec=`: how long no app must have been active before processing tasks run.
    public var processingIdleUSec: Int64 = 60 * second

    // [Memory]
    /// `PressureKill=`: terminate background and suspended apps under memory pressure.
    public var pressureKill: Bool = false
    /// `PressureThreshold=`: share of `PressureWindowSec` during which some task stalled on memory
    /// (PSI "some") that counts as pressure.
    public var pressureThreshold: Percentage = Percentage(10)
    /// `PressureWindowSec=`: the PSI window (500ms…10s, the kernel's limits).
    public var pressureWindowUSec: Int64 = 1 * second

    // [Journal]
    /// `JournalAssertionBurst=`: `grant`/`end` entries journaled one by one per app and interval; the rest
    /// are counted in one `coalesced` entry per app and interval (SPEC §11's journal budget).
    public var journalAssertionBurst: Int = 100
    /// `JournalAssertionGlobalBurst=`: `grant`/`end` entries journaled one by one per interval for all
    /// apps together, so that many apps cannot add up to journald's rate limit either.
    public var journalAssertionGlobalBurst: Int = 1000
    /// `JournalAssertionIntervalSec=`: the interval of both bursts (and of the denial bursts).
    public var journalAssertionIntervalUSec: Int64 = 30 * second
    /// `JournalDenialBurst=`: calls of one uid answered with a `deny` per interval before each of its
    /// connections refused a call is no longer read until the interval ends (every `deny` is journaled).
    public var journalDenialBurst: Int = 100
    /// `JournalDenialGlobalBurst=`: the same for all callers together.
    public var journalDenialGlobalBurst: Int = 1000

    // [Apps] (AppsConfig.swift)
    /// `[Apps]`: desktop entries, exemptions, adoption (SPEC §13).
    public var apps = AppsConfig()
    /// SPEC §16: `RemoteWakesPerHour=`, `WakeAlignmentSec=`, `[Buckets]` (EnergyConfig.swift).
    public var energy = EnergyConfig()

    /// The defaults.
    public init() {}

    /// The default configuration directory.
    public static let defaultConfigDirectory = "/etc/bgtaskd"
    /// The main file's name inside the configuration directory.
    public static let fileName = "bgtaskd.conf"
    /// The drop-in directory's name inside the configuration directory.
    public static let dropInDirectoryName = "bgtaskd.conf.d"

    /// Every key, by section, in the order of the documentation.
    public static var keys: [ConfigKeyName] {
        schema.keys.map { ConfigKeyName(section: $0.section, key: $0.key) }
    }

    /// Every setting with its value written as in the file (`5s`, `64KiB`, `yes`), in the order of `keys`.
    public var settings: [ConfigSetting] {
        Self.schema.keys.map { ConfigSetting(section: $0.section, key: $0.key, value: $0.format(self)) }
    }
}

/// A key of a configuration file and its section.
public struct ConfigKeyName: Hashable, Sendable, CustomStringConvertible {
    public var section: String
    public var key: String

    public init(section: String, key: String) {
        self.section = section
        self.key = key
    }

    /// `[Section] Key=`.
    public var description: String { "[\(section)] \(key)=" }
}

/// A key with its value as text.
public struct ConfigSetting: Hashable, Sendable {
    public var section: String
    public var key: String
    public var value: String
}

/// The text of one configuration file and the path to name in messages.
public struct ConfigSource: Hashable, Sendable {
    public var path: String
    public var text: String

    public init(path: String, text: String) {
        self.path = path
        self.text = text
    }
}

/// Microseconds in a second, and the longest time span a key takes (shared by the loader in DaemonConfig+Loading.swift).
let second: Int64 = 1_000_000
let maxTime: Int64 = 31_557_600 * second  // 1 year: beyond it a value is a mistake, and sums stay far from overflow
