// SPEC §17: a recording's checkpoint comes from a file, which may have been edited. What the core indexes by
// position is checked before a replay starts from it, so that an edited file gets a clear error, not a trap.

extension DaemonCore {
    /// What is wrong with this core as a checkpoint read from a file (`nil`: nothing found): every app's
    /// slot names its own record, and every record has its slot.
    public var checkpointProblem: String? {
        let m = lifecycle
        for (app, i) in m.slots {
            guard m.records.indices.contains(i) else { return "has app \(app) at record \(i) of \(m.records.count)" }
            guard m.records[i].id == app else { return "has app \(app) at the record of \(m.records[i].id)" }
        }
        guard m.slots.count == m.records.count else {
            return "has \(m.records.count) app records for \(m.slots.count) apps"
        }
        return nil
    }
}
