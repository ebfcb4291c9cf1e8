import BGTaskCore
import BGTaskVarlink

// A thaw is written once the events it enables are in the app's socket (the resume path, SPEC §2 rows 3
// and 5: "(thaw) → events"). The core orders `.thaw` before the `.deliver`s it enables; the shell performs
// the delivers that follow it at once (their bytes written to the app's stream, which a frozen app cannot
// read yet), then the thaw: the app wakes with its events waiting instead of waking, being seen thawed by
// the daemon's own `cgroup.events` watch and waiting for the daemon's turn to end before its events are
// written. The app sees the same order (nothing before the thaw, then the events); the caller's reply and
// every other action still come after the thaw. The decisions taken with the thaw (the resume, the foreground
// decision of a tap) have their energy accounted before it (the app still frozen) and are published after
// it, in their order: their journal entries, Monitor, Explain's history (`publish`).
extension DaemonService {
    /// Whether `action` may be performed while a thaw before it waits: the delivers it enables, and a
    /// decision only recorded (the foreground decision after a resume: its energy reading is the frozen
    /// app's, as at the suspension).
    static func mayPrecedeThaw(_ action: CoreAction) -> Bool {
        switch action {
        case .perform(.deliver, _, _), .perform(.record, _, _): return true
        default: return false
        }
    }

    /// Whether the decision of `action` is published after the thaws: it is a thaw's, or comes while one waits.
    static func publishesAfterThaw(_ action: Action, _ pendingThaws: [(AppID, Processes)]) -> Bool {
        if case .thaw = action { return true }
        return !pendingThaws.isEmpty
    }

    /// Defers `.thaw` until `completeThaws()`.
    func deferThaw(_ app: AppID, _ processes: Processes) {
        pendingThaws.append((app, processes))
    }

    /// Writes the streams that got events since the thaws were deferred, then thaws, then publishes the
    /// decisions held meanwhile.
    func completeThaws() {
        defer { publishHeldDecisions() }
        guard !pendingThaws.isEmpty else { return }
        let thaws = pendingThaws
        pendingThaws.removeAll()
        for conn in thawedStreams { streams[conn]?.connection.writeBufferedReplies() }
        thawedStreams.removeAll()
        for (app, processes) in thaws {
            if processes.own { freezer.thaw(app: app, pid: processes.pid) }
            if !processes.instances.isEmpty { adoption?.thaw(app) }
        }
    }
}

extension DaemonService {
    /// The decisions recorded while a thaw waited, in their order.
    func publishHeldDecisions() {
        guard !heldDecisions.isEmpty else { return }
        let held = heldDecisions
        heldDecisions.removeAll()
        for d in held { publish(d) }
    }
}

/// A decision recorded (its energy accounted) and not yet published: what `publish` needs of it.
struct PublishedDecision {
    var decision: Decision
    var journaled: Bool
    var peerPID: Int32?
    /// `BGTASKD_BACKGROUND_CPU_USEC=` of a `suspend`.
    var backgroundCPU: Int64?
    /// Whether the energy accounts are to be saved.
    var saveEnergy: Bool
    var realtimeUSec: Int64
}
