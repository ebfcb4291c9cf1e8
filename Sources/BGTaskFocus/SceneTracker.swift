/// bgtaskd-focus's scenes (SPEC §15), pure: every toplevel of the compositor is a scene of its app
/// (`toplevel-<n>`), reported with `SetSceneState` so that the daemon's core derives each app's state.
/// No clock, no I/O: the caller feeds toplevel changes with the monotonic time in microseconds, arms a
/// timer for ``nextDeadlineUSec`` and calls ``deadlineReached(nowUSec:)``.
///
/// - activated → `foreground-active`; minimized → `background`; closed → `disconnected`; neither
///   (not activated, not minimized) → ``Unfocused`` says: `background` where only the front window
///   shows (a phone, a tiling workspace) or `foreground-inactive` where it stays visible (a desktop).
/// - Reports wait until the toplevels have been quiet for `debounceUSec` (a quick switch away and back
///   costs nothing), and only what changed since the daemon was last told is reported: apps leaving the
///   front first; an app with a scene coming to the front gets that one before its others.
/// - While the screen is locked nothing is reported; unlocked, everything is told again.
public struct SceneTracker: Sendable {
    /// How a toplevel that is neither activated nor minimized counts.
    public enum Unfocused: String, CaseIterable, Sendable {
        case background
        case inactive
    }

    /// One `SetSceneState(appId, sceneId, state, title, output)`.
    public struct Report: Hashable, Sendable {
        public var appID: String
        public var sceneID: String
        /// foreground-active, foreground-inactive, background or disconnected.
        public var state: String
        public var title: String
        public var output: String?
    }

    struct Toplevel: Hashable, Sendable {
        var appID: String
        var title: String
        var output: String?
        var activated: Bool
        var minimized: Bool
    }

    public let debounceUSec: Int64
    public let unfocused: Unfocused
    private var toplevels: [UInt32: Toplevel] = [:]
    private var told: [UInt32: Report] = [:]
    private var closed: [UInt32: Report] = [:]
    private var dueUSec: Int64?
    /// The screen is locked: nothing is reported.
    public private(set) var locked = false
    /// Apps the daemon does not manage (its answer was NoSuchApp): their toplevels are not reported.
    public private(set) var ignored: Set<String> = []
    /// Refusals per toplevel (InvalidState: its app not running yet, a window mapped before the app
    /// checked in): tried again every ``retryUSec``, at most ``retryLimit`` times.
    private var refusals: [UInt32: Int] = [:]
    public static let retryUSec: Int64 = 1_000_000
    public static let retryLimit = 20

    public init(debounceUSec: Int64, unfocused: Unfocused = .background) {
        self.debounceUSec = max(0, debounceUSec)
        self.unfocused = unfocused
    }

    /// When ``deadlineReached(nowUSec:)`` is due; nil: nothing pending.
    public var nextDeadlineUSec: Int64? { locked ? nil : dueUSec }

    /// The scene ID of toplevel `id`.
    public static func sceneID(_ id: UInt32) -> String { "toplevel-\(id)" }

    /// A toplevel's state after its `done` event.
    public mutating func toplevelChanged(
        _ id: UInt32, appID: String, title: String, output: String?, activated: Bool, minimized: Bool, nowUSec: Int64
    ) {
        toplevels[id] = Toplevel(appID: appID, title: title, output: output, activated: activated, minimized: minimized)
        dueUSec = nowUSec + debounceUSec
    }

    /// A toplevel was closed.
    public mutating func toplevelClosed(_ id: UInt32, nowUSec: Int64) {
        refusals[id] = nil
        guard let t = toplevels.removeValue(forKey: id) else { return }
        if told[id] != nil {
            closed[id] = Report(appID: t.appID, sceneID: Self.sceneID(id), state: "disconnected", title: t.title, output: nil)
        }
        dueUSec = nowUSec + debounceUSec
    }

    /// The screen locked (nothing is reported) or unlocked (everything is told again, at once).
    public mutating func screen(locked isLocked: Bool, nowUSec: Int64) {
        guard isLocked != locked else { return }
        locked = isLocked
        if !isLocked {
            told = [:]
            dueUSec = nowUSec
        }
    }

    /// The quiet period ended: what to report, scenes leaving the front first. Each report is told
    /// (``told(_:)``) or forgotten by the caller as the daemon answers.
    public mutating func deadlineReached(nowUSec: Int64) -> [Report] {
        guard !locked, let due = dueUSec, nowUSec >= due else { return [] }
        dueUSec = nil
        var reports = closed.sorted { $0.key < $1.key }.map(\.value).filter { !ignored.contains($0.appID) }
        for id in closed.keys { told[id] = nil }
        closed = [:]
        for (id, t) in toplevels.sorted(by: { $0.key < $1.key }) where !t.appID.isEmpty && !ignored.contains(t.appID) {
            let report = Report(appID: t.appID, sceneID: Self.sceneID(id), state: state(t), title: t.title, output: t.output)
            if told[id] != report { reports.append(report) }
        }
        // Apps leaving the front first; an app with a scene coming to the front gets that one first, so that
        // it never passes through the background on the way (its other scenes follow).
        let rank = ["disconnected": 0, "background": 1, "foreground-inactive": 2, "foreground-active": 3]
        let staying = Set(reports.filter { $0.state.hasPrefix("foreground") }.map(\.appID))
        func key(_ r: Report) -> Int {
            let k = rank[r.state] ?? 0
            return staying.contains(r.appID) ? 10 + (3 - k) : k
        }
        return reports.enumerated().sorted {
            let (a, b) = (key($0.element), key($1.element))
            return a != b ? a < b : $0.offset < $1.offset
        }.map(\.element)
    }

    /// The daemon took `report` (or refused it for good): it is not reported again until it changes.
    public mutating func told(_ report: Report) {
        guard let id = toplevels.first(where: { Self.sceneID($0.key) == report.sceneID && $0.value.appID == report.appID })?.key
        else { return }
        told[id] = report
    }

    /// The daemon refused `report` for the app's state (InvalidState: not running yet, terminating): it is
    /// tried again after ``retryUSec``, at most ``retryLimit`` times for one toplevel; then taken as told.
    public mutating func refused(_ report: Report, nowUSec: Int64) {
        guard let id = toplevels.first(where: { Self.sceneID($0.key) == report.sceneID && $0.value.appID == report.appID })?.key
        else { return }
        let n = (refusals[id] ?? 0) + 1
        refusals[id] = n
        if n >= Self.retryLimit { return told(report) }
        let retry = nowUSec + Self.retryUSec
        dueUSec = min(dueUSec ?? retry, retry)
    }

    /// The daemon does not manage `appID` (NoSuchApp): its toplevels are left alone.
    public mutating func ignore(_ appID: String) { ignored.insert(appID) }

    /// A call failed (the daemon was not reached): everything is told again after the debounce.
    public mutating func forget(nowUSec: Int64) {
        told = [:]
        dueUSec = nowUSec + debounceUSec
    }

    func state(_ t: Toplevel) -> String {
        // Minimized first: a compositor may leave the activated flag on a window it minimized.
        if t.minimized { return "background" }
        if t.activated { return "foreground-active" }
        return unfocused == .inactive ? "foreground-inactive" : "background"
    }
}
