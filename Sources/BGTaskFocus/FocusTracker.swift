/// bgtaskd-focus's decisions, pure (SPEC §13): which app the compositor has in front, debounced, and
/// when to tell the daemon. No clock, no I/O: the caller feeds the compositor's toplevel events with the
/// current monotonic time in microseconds, arms a timer for ``nextDeadlineUSec`` and calls
/// ``deadlineReached(nowUSec:)`` when it fires.
///
/// - The front app is the app ID of the activated toplevel (the one activated last, should several say
///   so for a moment during a switch); none when no toplevel is activated (the home screen, the launcher).
/// - A change is told only after the front has stayed the same for `debounceUSec`: a quick switch away
///   and back costs nothing (no background, no freeze), and the intermediate "nothing activated" of a
///   switch is never told.
/// - The screen locked or blanked: no app is in front, told at once with reason `screen-locked`;
///   toplevel changes meanwhile are only remembered. Unlocked: the front app, at once, `compositor-focus`.
///   Several sources say so (the compositor's idle notification, logind's `LockedHint` and `IdleHint`):
///   the screen counts as locked while any of them does.
public struct FocusTracker: Sendable {
    /// What to tell the daemon.
    public enum Command: Hashable, Sendable {
        /// `SetFocus(appId, reason)`: this app is in front (nil: none).
        case setFocus(String?, reason: Reason)
    }

    /// The `reason` of `SetFocus`.
    public enum Reason: String, Hashable, Sendable {
        case compositorFocus = "compositor-focus"
        case screenLocked = "screen-locked"
    }

    public let debounceUSec: Int64
    private var toplevels: [UInt32: (appID: String, activated: Bool, since: UInt64)] = [:]
    private var counter: UInt64 = 0
    /// What the daemon was last told: `.none` nothing yet, `.some(nil)` no app, `.some(id)` that app.
    public private(set) var told: String?? = .none
    /// A change waiting for its debounce. A struct, not a tuple: Swift 6.3.1's optimizer crashed
    /// (CopyPropagation, "Found outside of lifetime use") on an optional tuple here in release builds.
    private struct Pending {
        var target: String?
        var dueUSec: Int64
        var reason: Reason
    }
    private var pending: Pending?
    /// The screen is locked or blank.
    public private(set) var locked = false
    /// Who says the screen is locked or blank.
    public enum LockSource: Hashable, Sendable {
        /// The compositor's idle notification (`--idle-timeout`).
        case compositorIdle
        /// logind's `LockedHint` on the session.
        case sessionLocked
        /// logind's `IdleHint` on the session.
        case sessionIdle
    }
    /// The sources that say so now.
    public private(set) var lockedBy: Set<LockSource> = []

    public init(debounceUSec: Int64) {
        self.debounceUSec = max(0, debounceUSec)
    }

    /// The app in front now (before the debounce): nil when no toplevel with an app ID is activated.
    public var front: String? {
        toplevels.values.filter { $0.activated && !$0.appID.isEmpty }.max { $0.since < $1.since }?.appID
    }

    /// When ``deadlineReached(nowUSec:)`` is due; nil: nothing pending.
    public var nextDeadlineUSec: Int64? { pending?.dueUSec }

    /// A toplevel's state after its `done` event.
    public mutating func toplevelChanged(_ id: UInt32, appID: String, activated: Bool, nowUSec: Int64) {
        let wasActivated = toplevels[id]?.activated ?? false
        var since = toplevels[id]?.since ?? 0
        if activated && !wasActivated {
            counter += 1
            since = counter
        }
        toplevels[id] = (appID, activated, since)
        update(nowUSec)
    }

    /// A toplevel was closed.
    public mutating func toplevelClosed(_ id: UInt32, nowUSec: Int64) {
        toplevels[id] = nil
        update(nowUSec)
    }

    /// The debounce of a change ended: the command to send, if any.
    public mutating func deadlineReached(nowUSec: Int64) -> Command? {
        guard let p = pending, nowUSec >= p.dueUSec else { return nil }
        pending = nil
        told = .some(p.target)
        return .setFocus(p.target, reason: p.reason)
    }

    /// The screen locked or blanked (`true`), or came back (`false`), as the compositor's idle notification
    /// says: told without the debounce.
    public mutating func screenLocked(_ isLocked: Bool, nowUSec: Int64) {
        screen(.compositorIdle, locked: isLocked, nowUSec: nowUSec)
    }

    /// One source says the screen is locked or blank (`true`) or not (`false`). The screen is locked while
    /// any source says so; a change of that is told without the debounce.
    public mutating func screen(_ source: LockSource, locked isSourceLocked: Bool, nowUSec: Int64) {
        if isSourceLocked { lockedBy.insert(source) } else { lockedBy.remove(source) }
        let isLocked = !lockedBy.isEmpty
        guard isLocked != locked else { return }
        locked = isLocked
        if isLocked {
            pending = Pending(target: nil, dueUSec: nowUSec, reason: .screenLocked)
        } else {
            told = .none
            pending = Pending(target: front, dueUSec: nowUSec, reason: .compositorFocus)
        }
    }

    /// After a failed call the daemon was not told: the same change is retried after the debounce.
    public mutating func forget(nowUSec: Int64) {
        told = .none
        if locked {
            pending = Pending(target: nil, dueUSec: nowUSec + debounceUSec, reason: .screenLocked)
        } else {
            update(nowUSec)
        }
    }

    private mutating func update(_ nowUSec: Int64) {
        if locked { return }  // remembered; told on unlock
        let target = front
        if case .some(let current) = told, current == target {
            pending = nil  // back to what the daemon already knows: nothing to do
        } else if pending == nil || pending?.target != target {
            pending = Pending(target: target, dueUSec: nowUSec + debounceUSec, reason: .compositorFocus)
        }
    }
}
