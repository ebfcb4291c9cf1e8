import BGTaskConfig
import BGTaskCore
import BGTaskProtocol
import BGTaskVarlink
import Dispatch
import Logging

#if canImport(Glibc)
import Glibc
#endif

extension DaemonService {
    // MARK: - Decisions: journal, Monitor, history

    /// The decision's `MESSAGE`, as the journal, Monitor and a HoldLost error give it.
    func journalMessage(_ d: Decision) -> String {
        var message = d.message
        if dryRun {
            switch d.kind {
            case .suspend, .resume, .terminate: message += " (dry run: FreezerBackend=none, not enforced)"
            default: break
            }
        }
        return message
    }

    /// A decision taken in the shell (its own, e.g. a snapshot's), for `call` if given: the core decides its
    /// journal entry (and counts a refusal for the caller) like its own.
    func record(_ decision: Decision, call: VarlinkRequest?) {
        feedCore(.decisionTaken(decision, from: call.map(Self.origin(of:))))
    }

    /// Journals a decision of the core (one by one when `journaled`, else the journal budget counted it),
    /// shows it on Monitor and keeps it for Explain; `peerPID`: the process whose call it answers. Its energy
    /// is accounted now (before its action); the rest waits for a thaw under way (`held`, +Thaw.swift).
    func record(_ decision: Decision, journaled: Bool, peerPID: Int32?, held: Bool = false) {
        decisionCount += 1
        let account = accountEnergy(decision)
        let realtime = clock.realtime().microsecondsSinceEpoch
        let published = PublishedDecision(
            decision: decision, journaled: journaled, peerPID: peerPID, backgroundCPU: account.backgroundCPU,
            saveEnergy: account.save, realtimeUSec: realtime)
        if held { return heldDecisions.append(published) }
        publish(published)
    }

    /// The journal entry, Monitor, Explain and the energy accounts' save of a recorded decision.
    func publish(_ p: PublishedDecision) {
        let d = p.decision
        let message = journalMessage(d)
        let backgroundCPU = p.backgroundCPU, peerPID = p.peerPID, journaled = p.journaled
        let realtime = p.realtimeUSec
        if p.saveEnergy { energy.save() }
        if let app = d.app {
            if StateCause.explains(d.kind, d.reason) {
                // In place: no copy of the app's history per decision.
                history[app, default: DecisionHistory()].append(
                    realtimeUSec: realtime, kind: d.kind, reason: d.reason, message: message, app: app,
                    limit: Self.historyLimit, scratch: &historyScratch)
                if !lastNonCause.isEmpty { lastNonCause[app] = nil }
            } else {
                // Not a cause of the app's state (a refusal, a notification): not in Explain's history, so
                // that none pushes a cause out of it; still GetApp's lastDecision.
                lastNonCause[app] = DecisionRecord(realtimeUSec: realtime, app: app, kind: d.kind, reason: d.reason, message: message)
            }
        }
        let priority: JournalPriority = d.severity == .warning ? .warning : (d.severity == .notice ? .notice : .info)
        // The fields are formatted by the journal's writer, off this queue; the uid is looked up only for
        // an entry that is journaled (issue 15: most grants and ends are counted by the budget instead).
        if journaled {
            let uid = d.app.map { expectedUID($0) }
            journal.send(message, priority: priority, essential: JournalBudget.isAlwaysJournaled(d.kind)) { fields in
                Self.writeJournalFields(d, uid: uid, peerPID: peerPID, into: &fields)
                fields.add("BGTASKD_BACKGROUND_CPU_USEC", backgroundCPU)
            }
        }
        if !monitors.isEmpty {
            let reply = ManagerWire.MonitorReply(decision: wireDecision(
                DecisionRecord(
                    realtimeUSec: realtime, app: d.app, kind: d.kind, reason: d.reason, message: message, scene: d.scene)))
            for m in monitors.values { m.reply(reply, continues: true) }
        }
    }

    /// The SPEC §11 fields of a decision, written into the writer's entry.
    private static func writeJournalFields(_ d: Decision, uid: UInt32?, peerPID: Int32?, into fields: inout JournalEntryFields) {
        fields.add("MESSAGE_ID", MessageIDs.of(d.kind))
        fields.add("BGTASKD_DECISION", d.kind.rawValue)
        fields.add("BGTASKD_REASON", d.reason.rawValue)
        fields.add("BGTASKD_APP", d.app?.rawValue)
        fields.add("BGTASKD_STATE", d.state?.rawValue)
        fields.add("BGTASKD_PREVIOUS_STATE", d.previousState?.rawValue)
        fields.add("BGTASKD_TASK_ID", d.taskID?.rawValue)
        fields.add("BGTASKD_TASK_NAME", d.taskName)
        fields.add("BGTASKD_SCENE", d.scene?.rawValue)
        fields.add("BGTASKD_REMAINING_USEC", d.remaining?.microseconds)
        fields.add("BGTASKD_PID", d.pid)
        fields.add("OBJECT_PID", d.pid)
        fields.add("BGTASKD_UID", uid)
        fields.add("BGTASKD_PEER_PID", peerPID)
    }

    // MARK: - JSON views

    /// The app's own Background App Refresh setting ("on"/"off").
    func refreshSetting(_ app: AppID) -> Bool { core.refresh.setting(for: app) }

    /// SPEC §5: restricted, denied or available.
    func refreshStatus(_ app: AppID) -> String { core.refresh.status(for: app).rawValue }

    /// Read-only access to the lifecycle machine (the daemon's stop reads it).
    var lifecycle: LifecycleMachine { machine }

    /// Control methods: the core decides (root, or a member of `ControlGroup=`) on the caller's credentials
    /// and its supplementary groups, read from /proc at call time when the core says they can change
    /// its answer (not for root, nor without `ControlGroup=`); a refused request is failed.
    func mayControl(_ request: VarlinkRequest) -> Bool {
        let peer = request.peer
        let groups = core.controlCallNeedsGroups(peer.caller) ? ProcessInfoReader.supplementaryGroups(pid: peer.pid) : []
        return permitted(.controlCallReceived(caller: peer.caller, groups: groups), request)
    }

    /// Sentences on what, beside the recorded decisions, decides the app's fate (for Explain).
    func causes(_ app: AppID) -> [String] {
        var out: [String] = []
        if history[app] == nil {
            // Decisions live in memory; after a restart the journal has the earlier ones.
            out.append(
                "bgtaskd has decided nothing about \(app) since it started; earlier decisions are in the journal: "
                    + "journalctl -t bgtaskd BGTASKD_APP=\(app)")
        }
        if let reason = core.refresh.denial(app) {
            out.append(
                "Background App Refresh is \(refreshStatus(app)) (\(reason.rawValue)): \(RefreshMessages.explain(reason)); "
                    + "the daemon launches or wakes \(app) for no scheduled task or remote notification")
        }
        if dryRun {
            out.append("FreezerBackend=none: a dry run; decisions are recorded but nothing is frozen, thawed or killed")
        }
        return out
    }
}

/// Facts about other processes from /proc.
enum ProcessInfoReader {
    static func supplementaryGroups(pid: Int32) -> [UInt32] {
        guard let text = readFile("/proc/\(pid)/status") else { return [] }
        for line in text.split(separator: "\n") where line.hasPrefix("Groups:") {
            return line.dropFirst("Groups:".count).split(whereSeparator: { $0 == " " || $0 == "\t" }).compactMap { UInt32($0) }
        }
        return []
    }
}
