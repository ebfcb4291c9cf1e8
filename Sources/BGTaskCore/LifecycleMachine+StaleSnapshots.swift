// SPEC §15: snapshots live until the app terminates, across a restart of the daemon too.

extension LifecycleMachine {
    /// Whether the app's snapshots are kept: while it runs (launched, or adopted: SPEC §13). An app the
    /// core does not know, or that is not running, has none.
    public func keepsSnapshots(of app: AppID) -> Bool {
        guard let i = slots[app] else { return false }
        return records[i].state != .notRunning
    }

    /// At start-up, of the snapshot directories found (by name: the app's ID), those that belong to no
    /// running app: left by a previous run (a crash, kill -9) of apps that are gone, or that the new run
    /// terminated (its own launches, ``Reason/daemonRestarted``), or named like no app. An app adopted again
    /// (SPEC §13: still running in its own unit) keeps its snapshots; they go when it terminates.
    public func staleSnapshotDirectories(_ names: [String]) -> [String] {
        names.filter { name in AppID(name).map { !keepsSnapshots(of: $0) } ?? true }
    }
}
