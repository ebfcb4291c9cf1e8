import BGTaskCore

/// The fingerprint the recorder keeps of an input's actions (SPEC §17), in place of the actions: their
/// number, and per action its case and what its decision or reply says (kind, reason, states, task and
/// activity, remaining time, pid, severity; the lengths of its app ID and task name; the request it
/// answers; an event's id and kind). Mixed into 64 bits with a multiply-xorshift, in a few hundred
/// instructions per input: `Hasher` over the whole values (SipHash, every string's bytes) took ~5,000,
/// more than copying the actions did (bench/swift/RecordLoop.swift under callgrind; docs/performance.md).
/// So it tells apart what the core decided, not every byte of the text it would render: two decisions
/// of the same kind and reason for the same app and task whose texts differ only in a string of the same
/// length (a sentence in `detail`) have the same fingerprint.
extension InputRecorder {
    static func fingerprint(_ actions: [CoreAction]) -> Int {
        var m = FingerprintMixer()
        m.add(UInt64(actions.count))
        for action in actions { m.add(action) }
        return Int(truncatingIfNeeded: m.h)
    }
}

struct FingerprintMixer {
    var h: UInt64 = 0x9E37_79B9_7F4A_7C15

    mutating func add(_ v: UInt64) {
        h = (h ^ v) &* 0xFF51_AFD7_ED55_8CCD
        h ^= h >> 29
    }

    mutating func add(_ v: Int64) { add(UInt64(bitPattern: v)) }
    mutating func add(_ v: Int) { add(UInt64(UInt(bitPattern: v))) }
    mutating func add(_ v: Bool) { add(v ? 1 as UInt64 : 2) }

    /// A case of an enum without payloads (its one-byte tag; an optional's too): `RecorderFingerprintTests`
    /// checks these types are one byte.
    mutating func add<T>(tag v: T) {
        add(withUnsafeBytes(of: v) { $0.count == 1 ? UInt64($0[0]) : UInt64($0.count) << 8 })
    }

    mutating func add(_ s: String?) { add(s.map { UInt64($0.utf8.count) } ?? .max) }
    mutating func add(_ id: AppID?) { add(id?.rawValue) }
    mutating func add(_ id: TaskID?) { add(id?.rawValue ?? .max) }
    mutating func add(_ id: RequestID?) { add(id?.rawValue ?? .max) }

    mutating func add(_ d: Decision) {
        add(tag: d.kind)
        add(tag: d.reason)
        add(d.app)
        add(tag: d.state)
        add(tag: d.previousState)
        add(d.taskID)
        add(d.taskName)
        add(d.activityID?.rawValue ?? .max)
        add(d.remaining?.microseconds ?? .min)
        add(Int64(d.pid ?? -1))
        add(tag: d.severity)
    }

    mutating func add(_ r: Reply) {
        switch r {
        case .ok: add(1 as UInt64)
        case .checkedIn(let state): add(2 as UInt64); add(tag: state)
        case .taskID(let id): add(3 as UInt64); add(id)
        case .holdID(let id): add(4 as UInt64); add(id)
        case .activityID(let id): add(5 as UInt64); add(id.rawValue)
        case .failure(let error): add(6 as UInt64); add(tag: error)
        case .invalidState(let state): add(7 as UInt64); add(tag: state)
        }
    }

    mutating func add(_ a: Action) {
        switch a {
        case .deliver(let app, let connection, let event):
            add(1 as UInt64); add(app); add(connection.rawValue); add(event.id.rawValue); add(tag: event.kind); add(tag: event.state)
        case .launch(let app, let reason, let d): add(2 as UInt64); add(app); add(tag: reason); add(d)
        case .freeze(let app, _, let d): add(3 as UInt64); add(app); add(d)
        case .thaw(let app, _, let d): add(4 as UInt64); add(app); add(d)
        case .terminate(let app, _, let d): add(5 as UInt64); add(app); add(d)
        case .kill(let app, _, let d): add(6 as UInt64); add(app); add(d)
        case .reply(let reply, let to): add(7 as UInt64); add(reply); add(to)
        case .record(let d): add(8 as UInt64); add(d)
        case .release(let app): add(9 as UInt64); add(app)
        case .stopFinished(let unexited): add(10 as UInt64); add(unexited.count)
        case .holdLost(let app, let task, let to, let d): add(11 as UInt64); add(app); add(task); add(to); add(d)
        case .memoryPressure: add(12 as UInt64)
        case .taskStarted(let app, let identifier): add(13 as UInt64); add(app); add(identifier)
        case .inhibitIdle(let inhibition):
            add(14 as UInt64); add(inhibition?.appCount ?? -1); add(inhibition?.assertions ?? -1); add(inhibition?.tasks ?? -1)
        case .verifyFrozen(let app, _): add(15 as UInt64); add(app)
        case .observeLocks(let app, _): add(16 as UInt64); add(app)
        case .inspectFreeze(let app, _): add(17 as UInt64); add(app)
        case .progressReported: add(18 as UInt64)
        }
    }

    mutating func add(_ c: CoreAction) {
        switch c {
        case .perform(let action, let journaled, let peer):
            add(1 as UInt64); add(action); add(journaled); add(Int64(peer?.pid ?? -1))
        case .journalSummaries(let summaries): add(2 as UInt64); add(summaries.count)
        case .pauseConnection(let origin, _): add(3 as UInt64); add(origin.connection.rawValue)
        case .releasePausedConnections: add(4 as UInt64)
        case .checkFreeze(let app, _, let late): add(5 as UInt64); add(app); add(late)
        case .freezeWithSignals(let app, _): add(6 as UInt64); add(app)
        case .answerRefresh(_, let to): add(7 as UInt64); add(to)
        case .saveRefreshState(_, let to): add(8 as UInt64); add(to)
        case .replyAwaitsLaunch(let app, let to): add(9 as UInt64); add(app); add(to)
        case .answerLaunch(let app, let to, let failure): add(10 as UInt64); add(app); add(to); add(failure)
        }
    }
}
