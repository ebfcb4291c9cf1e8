/// SPEC §16: why a background wake happened (the keys of `AppInfo.energy.wakes`).
public enum WakeCause: String, CaseIterable, Hashable, Sendable, Comparable {
    /// A scheduled task (refresh or processing) launched or resumed the app.
    case task
    /// `WakeForRemoteNotification`.
    case remoteNotification = "remote-notification"
    /// `WakeForBusCall` (a session-bus call to a frozen app).
    case busCall = "bus-call"
    /// A lock of the frozen app was waited for (`lock-contended`).
    case lock
    /// Anything a person or a manager asked for (`Launch --background`, a hold, `RunTaskNow`).
    case user

    /// In the order they are listed above.
    public static func < (lhs: WakeCause, rhs: WakeCause) -> Bool {
        allCases.firstIndex(of: lhs) ?? 0 < allCases.firstIndex(of: rhs) ?? 0
    }

    /// The cause of a wake decision (`resume` or `launch` into the background).
    static func of(_ d: Decision) -> WakeCause {
        switch d.reason {
        case .remoteNotification: return .remoteNotification
        case .busCall: return .busCall
        case .lockContended: return .lock
        case .taskScheduled: return .task
        default:
            if case .launched(_, .backgroundTask) = d.detail, d.reason != .userRequest { return .task }
            return .user
        }
    }
}

/// Background CPU time and wakes over some span of time.
///
/// The wake counts are kept inline, one per ``WakeCause`` (not a dictionary per figure: with 10,000 apps
/// the accounts' dictionaries were ~3.6 MiB of the daemon's heap; `MemoryProbeTests.energyAccounts`).
public struct EnergyFigures: Hashable, Sendable {
    /// CPU time used while not in the foreground (µs).
    public var backgroundCPUUSec: Int64 = 0
    private var counts = WakeCounts()

    /// Background wakes by cause (causes never counted are absent).
    public var wakes: [WakeCause: Int64] {
        get {
            var out: [WakeCause: Int64] = [:]
            for cause in WakeCause.allCases where counts[cause] != 0 { out[cause] = counts[cause] }
            return out
        }
        set {
            counts = WakeCounts()
            for (cause, n) in newValue { counts[cause] = n }
        }
    }

    /// No CPU, no wakes.
    public init(backgroundCPUUSec: Int64 = 0, wakes: [WakeCause: Int64] = [:]) {
        self.backgroundCPUUSec = backgroundCPUUSec
        for (cause, n) in wakes { counts[cause] = n }
    }

    /// Every wake, whatever its cause.
    public var totalWakes: Int64 { WakeCause.allCases.reduce(0) { $0 + counts[$1] } }

    /// The wakes of one cause (0 if never counted), without the dictionary ``wakes`` makes.
    public func wakeCount(_ cause: WakeCause) -> Int64 { counts[cause] }

    /// Counts one wake of `cause`.
    mutating func countWake(_ cause: WakeCause) { counts[cause] += 1 }

    mutating func add(_ other: EnergyFigures) {
        backgroundCPUUSec = saturatingAdd(backgroundCPUUSec, other.backgroundCPUUSec)
        for cause in WakeCause.allCases { counts[cause] += other.counts[cause] }
    }
}

/// One counter per ``WakeCause``.
private struct WakeCounts: Hashable, Sendable {
    var task: Int64 = 0
    var remoteNotification: Int64 = 0
    var busCall: Int64 = 0
    var lock: Int64 = 0
    var user: Int64 = 0

    subscript(cause: WakeCause) -> Int64 {
        get {
            switch cause {
            case .task: task
            case .remoteNotification: remoteNotification
            case .busCall: busCall
            case .lock: lock
            case .user: user
            }
        }
        set {
            switch cause {
            case .task: task = newValue
            case .remoteNotification: remoteNotification = newValue
            case .busCall: busCall = newValue
            case .lock: lock = newValue
            case .user: user = newValue
            }
        }
    }
}

/// What one app's background work cost (SPEC §16, `AppInfo.energy`).
public struct AppEnergy: Hashable, Sendable {
    /// Since accounting began (kept across daemon restarts).
    public var total: EnergyFigures
    /// Over the last 24 hours (wall clock, whole hours).
    public var last24h: EnergyFigures
}

/// One app's accounts as they are kept (and persisted by the shell).
public struct EnergyAccount: Sendable {
    /// Since accounting began.
    public var total = EnergyFigures()
    /// The hours, oldest first (a short array: a dictionary per app cost more than its figures). Empty
    /// when there is one hour whose figures are ``total`` (``soleHour``).
    private var hourList: [HourFigures] = []
    /// With `hourList` empty: the one hour kept, whose figures are ``total`` (an app accounted within one
    /// hour, the usual case: no array for it, 96 bytes less per app); `Int64.min`: none.
    private var soleHour = Int64.min

    /// Per wall-clock hour (`microsecondsSinceEpoch / 1 h`); only the last 24 are kept.
    public var hours: [Int64: EnergyFigures] {
        get {
            if soleHour != .min { return [soleHour: total] }
            return Dictionary(hourList.map { ($0.hour, $0.figures) }, uniquingKeysWith: { _, last in last })
        }
        set { set(hours: newValue) }
    }

    /// Calls `body` with each hour kept and its figures, oldest first, without the dictionary ``hours`` makes.
    public func forEachHour(_ body: (Int64, EnergyFigures) -> Void) {
        if soleHour != .min { return body(soleHour, total) }
        for h in hourList { body(h.hour, h.figures) }
    }

    /// Kept as one hour, without a list (for tests).
    var isOneHour: Bool { soleHour != .min }

    private mutating func set(hours: [Int64: EnergyFigures]) {
        if hours.count == 1, let (hour, figures) = hours.first, figures == total, hour != .min {
            hourList = []
            soleHour = hour
        } else {
            hourList = hours.map { HourFigures(hour: $0.key, figures: $0.value) }.sorted { $0.hour < $1.hour }
            soleHour = .min
        }
    }

    /// An empty account.
    public init(total: EnergyFigures = EnergyFigures(), hours: [Int64: EnergyFigures] = [:]) {
        self.total = total
        set(hours: hours)
    }

    /// Adds `figures` to `hour` and drops the hours before the last 24.
    mutating func add(_ figures: EnergyFigures, hour: Int64) {
        if hourList.isEmpty, hour != .min {
            if soleHour == hour || (soleHour == .min && total == EnergyFigures()) {
                total.add(figures)
                soleHour = hour
                return
            }
            if soleHour != .min {
                hourList = [HourFigures(hour: soleHour, figures: total)]
                soleHour = .min
            }
        }
        total.add(figures)
        if let k = hourList.firstIndex(where: { $0.hour == hour }) {
            hourList[k].figures.add(figures)
        } else {
            hourList.append(HourFigures(hour: hour, figures: figures))
            hourList.sort { $0.hour < $1.hour }
        }
        hourList.removeAll { $0.hour <= hour - 24 }
    }

    /// The sum of the hours in (`hour` - 24, `hour`].
    func day(endingAt hour: Int64) -> EnergyFigures {
        if soleHour != .min { return soleHour > hour - 24 && soleHour <= hour ? total : EnergyFigures() }
        var day = EnergyFigures()
        for h in hourList where h.hour > hour - 24 && h.hour <= hour { day.add(h.figures) }
        return day
    }
}

extension EnergyAccount: Hashable {
    /// Equal when their figures are (however they are kept).
    public static func == (a: EnergyAccount, b: EnergyAccount) -> Bool { a.total == b.total && a.hours == b.hours }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(total)
        hasher.combine(hours)
    }
}

private struct HourFigures: Hashable, Sendable {
    var hour: Int64
    var figures: EnergyFigures
}

/// When the shell must read an app's cumulative CPU usage (cgroup `cpu.stat` `usage_usec`, or the app's
/// processes' `/proc/PID/stat`) and feed it to ``EnergyLedger/measured(_:_:usage:at:)``.
public enum EnergyMeasurement: Hashable, Sendable {
    /// A background period begins (the app entered the background, was launched or resumed into it).
    case periodBegins
    /// It ends (suspended, back in the foreground, terminated or exited).
    case periodEnds
}

/// SPEC §16's accounting, pure: which decisions begin and end a background period (the time an app spends
/// not in the foreground and not frozen), which are wakes and of what cause, and the sums per app over the
/// last 24 h and since accounting began. The shell feeds it every decision (``observe(_:at:)``), reads the
/// app's CPU usage when told to, and persists ``accounts``.
public struct EnergyLedger: Sendable {
    static let hourUSec: Int64 = 3_600_000_000

    /// Every app's account.
    public private(set) var accounts: [AppID: EnergyAccount]
    /// Usage read at the start of each open background period.
    private var marks: [AppID: Int64] = [:]
    /// Apps whose period began but whose usage has not been fed yet.
    private var opening: Set<AppID> = []
    /// Apps whose period is ending with their suspension (their usage not fed yet).
    private var suspending: Set<AppID> = []
    /// The usage read when each suspended app's period ended: a resume from that suspension begins its
    /// period there without a new reading (the app was frozen since); any other decision of the app drops it.
    private var atSuspension: [AppID: Int64] = [:]

    /// A ledger that continues `accounts` (from the state directory; empty on a first start).
    public init(accounts: [AppID: EnergyAccount] = [:]) {
        self.accounts = accounts
    }

    /// What decision `d` means for its app's background time: a measurement to make now (before the
    /// decision's action is performed), or none. A wake is counted here. `unrunSinceResume`: the app has not
    /// run since its last decision resumed it (the shell performs a thaw once the events it enables are
    /// written, and the decisions taken with them before it: the foreground decision of a tap on a suspended
    /// app); its usage is then still the one its period began at, and a period it ends is charged from that
    /// without a reading.
    public mutating func observe(
        _ d: Decision, at realtime: RealtimeInstant, unrunSinceResume: Bool = false
    ) -> EnergyMeasurement? {
        guard let app = d.app, let state = d.state else { return nil }
        let previous = d.previousState
        let isWake = (d.kind == .resume && previous == .suspended && state == .background)
            || (d.kind == .launch && previous == .notRunning && state == .background)
        if isWake {
            var wake = EnergyFigures()
            wake.countWake(WakeCause.of(d))
            add(wake, to: app, at: realtime)
        }
        let open = marks[app] != nil || opening.contains(app)
        let suspendedUsage = atSuspension.removeValue(forKey: app)
        if state == .background, let previous, previous != .background, !open {
            if previous == .suspended, let suspendedUsage {
                // The resume's reading would be the suspension's: the resumed app has not run yet.
                marks[app] = suspendedUsage
                return nil
            }
            opening.insert(app)
            return .periodBegins
        }
        if open, state != .background || d.kind == .terminate {
            if state == .suspended, d.kind != .terminate { suspending.insert(app) }
            if unrunSinceResume, !opening.contains(app), let mark = marks[app] {
                // Frozen since the period's mark was read: the reading would be the mark.
                measured(app, .periodEnds, usage: mark, at: realtime)
                return nil
            }
            return .periodEnds
        }
        return nil
    }

    /// The usage (µs, cumulative, `nil`: it could not be read) the shell read for `measurement`. At a
    /// period's end, returns the CPU time the period used (`nil`: unknown), which is added to the accounts.
    @discardableResult
    public mutating func measured(
        _ app: AppID, _ measurement: EnergyMeasurement, usage: Int64?, at realtime: RealtimeInstant
    ) -> Int64? {
        switch measurement {
        case .periodBegins:
            opening.remove(app)
            marks[app] = usage
            return nil
        case .periodEnds:
            opening.remove(app)
            if suspending.remove(app) != nil, let usage { atSuspension[app] = usage }
            guard let mark = marks.removeValue(forKey: app), let usage else { return nil }
            // A counter that went backwards belongs to a new cgroup or process: nothing is known of the period.
            let used = Swift.max(0, usage - mark)
            add(EnergyFigures(backgroundCPUUSec: used), to: app, at: realtime)
            return used
        }
    }

    /// The app's figures at `realtime` (zero for an app never accounted).
    public func energy(of app: AppID, at realtime: RealtimeInstant) -> AppEnergy {
        guard let account = accounts[app] else { return AppEnergy(total: EnergyFigures(), last24h: EnergyFigures()) }
        return AppEnergy(total: account.total, last24h: account.day(endingAt: realtime.microsecondsSinceEpoch / Self.hourUSec))
    }

    private mutating func add(_ figures: EnergyFigures, to app: AppID, at realtime: RealtimeInstant) {
        let hour = realtime.microsecondsSinceEpoch / Self.hourUSec
        accounts[app, default: EnergyAccount()].add(figures, hour: hour)
    }
}
