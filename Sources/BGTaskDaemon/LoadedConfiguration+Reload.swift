import BGTaskConfig
import BGTaskCore

/// What a reload put in force and what it could not (SPEC §9; `Reload`'s reply, `bgtaskctl reload`).
struct ReloadReport: Sendable, Equatable {
    /// `[Section] Key=value` of each bgtaskd.conf key that changed, `apps.d: ID added|changed|removed`.
    var applied: [String] = []
    /// `FILE:LINE: KEY: why` of each change that is not in force (a key read only at start).
    var notApplied: [String] = []
}

extension LoadedConfiguration {
    /// Keeps the values in force (from `old`) of the keys read only at start, and says each one the files
    /// change: the new configuration is what the daemon runs with after the reload.
    mutating func keepStartOnlyKeys(of old: LoadedConfiguration, configDirectory: String) -> [String] {
        var notes: [(key: String, inForce: String, wanted: String)] = []
        func keep<T: Equatable>(_ key: String, _ path: WritableKeyPath<LoadedConfiguration, T>, _ text: (T) -> String) {
            guard self[keyPath: path] != old[keyPath: path] else { return }
            notes.append((key, text(old[keyPath: path]), text(self[keyPath: path])))
            self[keyPath: path] = old[keyPath: path]
        }
        keep("Socket", \.socketPath) { $0 }
        keep("FreezerBackend", \.daemon.freezerBackend) { $0.rawValue }
        keep("CgroupRoot", \.daemon.cgroupRoot) { $0 ?? "" }
        keep("LauncherSocket", \.launcherSocketPath) { $0 ?? "" }
        keep("RecordInputs", \.daemon.recordInputs) { $0 ? "yes" : "no" }
        keep("RecordMaxBytes", \.daemon.recordMaxBytes) { String($0) }
        // What GetSettings shows follows what is in force.
        daemon.socket = old.daemon.socket
        daemon.launcherSocket = old.daemon.launcherSocket
        guard !notes.isEmpty else { return [] }
        let locations = DaemonConfig.assignments(configDirectory: configDirectory)
        let main = configDirectory + "/" + DaemonConfig.fileName
        return notes.map { note in
            let at = locations[note.key].map { "\($0.file):\($0.line)" } ?? main
            return "\(at): \(note.key): read only when bgtaskd starts, not applied: restart bgtaskd for it "
                + "(in force: \(quotedOrEmpty(note.inForce)), the files say: \(quotedOrEmpty(note.wanted)))"
        }
    }

    /// What changed from `old` and is in force now.
    func appliedChanges(from old: LoadedConfiguration) -> [String] {
        var out = daemon.changedKeys(from: old.daemon).map { "[\($0.section)] \($0.key)=\(daemon.formatted(section: $0.section, key: $0.key) ?? "")" }
        for id in Set(manifests.keys).union(old.manifests.keys).sorted() {
            switch (old.manifests[id], manifests[id]) {
            case (nil, .some): out.append("apps.d: \(id) added")
            case (.some, nil): out.append("apps.d: \(id) removed")
            case (.some(let a), .some(let b)) where a != b: out.append("apps.d: \(id) changed")
            default: break
            }
        }
        return out
    }
}

private func quotedOrEmpty(_ s: String) -> String { s.isEmpty ? "(empty)" : s }
