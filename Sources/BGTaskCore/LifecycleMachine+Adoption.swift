/// One cgroup that holds processes of an app the daemon did not start (SPEC §13): a systemd unit under a
/// user manager's `app.slice`, named by the path below the watched cgroup.
public struct InstanceID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ value: String) { self.rawValue = value }
    public var description: String { rawValue }
    public static func < (a: InstanceID, b: InstanceID) -> Bool { a.rawValue < b.rawValue }

    /// The uid of the user manager the unit runs under: N of the path's `user@N.service` component
    /// (the last one, should the path name several); nil when it names none.
    public var ownerUID: UInt32? {
        for part in rawValue.split(separator: "/").reversed() where part.hasPrefix("user@") && part.hasSuffix(".service") {
            let digits = part.dropFirst("user@".count).dropLast(".service".count)
            guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { continue }
            return UInt32(digits)
        }
        return nil
    }
}

// SPEC §13: apps started by others are adopted; exempt apps are never frozen.
extension LifecycleMachine {
    /// A cgroup of the app appeared. A first instance makes a stopped app active (the user just
    /// started it); a new instance of a background or suspended app brings it back to the foreground
    /// (its other instances are thawed); an app being terminated takes the new instance with it.
    mutating func instanceAppeared(_ app: AppID, _ instance: InstanceID, pid: Int32?) {
        guard let i = slots[app], !records[i].instances.contains(instance) else { return }
        records[i].instances.append(instance)
        if let termination = records[i].termination {
            emit(.kill(app, processes(i), decision(
                .terminate, termination.reason, i, severity: .notice,
                .newInstanceTerminated(instance))))
            return
        }
        switch records[i].state {
        case .notRunning:
            // A launch of the daemon's own is under way: the instance joins it.
            guard records[i].launch == nil else { return }
            records[i].state = .active
            records[i].pid = pid
            records[i].pidIsOwn = false
            records[i].launchedByDaemon = false
            records[i].lastUsed = now
            record(.launch, .adopted, i, previous: .notRunning, .adopted(instance))
        case .active, .inactive:
            record(.launch, .adopted, i, .adoptedAnotherInstance(instance, backToForeground: false))
        case .background, .suspended:
            record(.launch, .adopted, i, .adoptedAnotherInstance(instance, backToForeground: true))
            bringToForeground(i, exclusive: false, reason: .adopted)
        }
    }

    /// A cgroup of the app emptied or went away. When it was the last one of an app the daemon did not
    /// start, the app has exited.
    mutating func instanceVanished(_ app: AppID, _ instance: InstanceID) {
        guard let i = slots[app], let k = records[i].instances.firstIndex(of: instance) else { return }
        records[i].instances.remove(at: k)
        let r = records[i]
        guard r.instances.isEmpty, !r.launchedByDaemon, r.state != .notRunning || r.termination != nil else { return }
        let previous = r.state
        resetToNotRunning(i)
        emit(.record(Decision(
            kind: .terminate, reason: r.termination?.reason ?? .appExited, app: app, state: .notRunning,
            previousState: previous, pid: r.pid, severity: r.termination == nil ? .notice : .info,
            detail: .lastInstanceGone(instance, terminated: r.termination != nil))))
    }

    /// A cgroup of the app is no longer watched; its processes keep running. The last one releases the app.
    mutating func instanceReleased(_ app: AppID, _ instance: InstanceID) {
        guard let i = slots[app], let k = records[i].instances.firstIndex(of: instance) else { return }
        if records[i].instances.count == 1, releaseAdopted(i, .adoptionChanged) {
            return
        }
        records[i].instances.remove(at: k)
    }

    /// The app's manifest or desktop entry went away (or its instances are no longer watched) while it runs
    /// only as instances others started: they are not the daemon's to end. They are released from
    /// management instead: thawed if suspended, the app not running as far as the daemon knows (forgotten
    /// if its manifest is gone), one `terminate` decision with the reason saying so. False (nothing done)
    /// for an app the daemon launched itself.
    mutating func releaseAdopted(_ i: Int, _ reason: Reason) -> Bool {
        let r = records[i]
        guard !r.launchedByDaemon, r.launch == nil, !r.instances.isEmpty, r.state != .notRunning else { return false }
        let app = r.id
        let previous = r.state
        if previous == .suspended {
            records[i].state = .background
            emit(.thaw(app, processes(i), decision(.resume, reason, i, previous: .suspended, .resumedForRelease)))
        }
        let instances = r.instances
        resetToNotRunning(i)
        records[i].instances = []
        emit(.record(Decision(
            kind: .terminate, reason: reason, app: app, state: .notRunning, previousState: previous,
            pid: r.pid, severity: .notice, detail: .releasedFromManagement(instances: instances))))
        return true
    }

    /// An exempt app stays in the background unfrozen; the decision is recorded once per stay.
    mutating func keepExempt(_ i: Int) {
        guard records[i].lastDecision?.reason != .exempt else { return }
        record(.policy, .exempt, i, remaining: remaining(i), .exemptFromFreezing)
    }
}
