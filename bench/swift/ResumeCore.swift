import BGTaskCore
import BGTaskDaemon
import BGTaskProtocol

#if canImport(Glibc)
import Glibc
#endif

/// Row 5b's core part, without sockets or a freezer (docs/performance.md, "Row 5b: the core's part"): one
/// lifecycle-aware app among `apps - 1` others in the background, `cycles` times sent to the background,
/// its `did-enter-background` acknowledged, frozen, and brought back with `Foreground`; only the
/// `Foreground` input is timed, fed to the composite core and to an `InputRecorder` as the daemon's
/// `takeCore` does. `sleepMS` > 0: the program sleeps that long before each timed resume, as a daemon idle
/// between taps does (what the CPU kept meanwhile is the host's). Under `valgrind --tool=callgrind
/// --toggle-collect='*resumeCoreForeground*'` the count grows linearly with `cycles`: the difference of two
/// runs (100 and 200 cycles) over 100 is one resume's instructions.
func resumeCore(cycles: Int, apps: Int, sleepMS: Int) {
    let ids = (0..<Swift.max(1, apps)).compactMap { AppID("org.bench.Resume\($0)") }
    let app = ids[0]
    var core = RecordingStart(lifecycle: .default, journal: JournalBudget.Limits(), denial: DenialBudget.Limits()).makeCore()
    var recorder = InputRecorder(start: core, maxBytes: 16 << 20)
    var t: Int64 = 1_000_000
    var request: UInt64 = 0
    let origin = CallOrigin(connection: ConnectionID(7), caller: DenialBudget.Caller(uid: 0, pid: 100))
    func feed(_ input: CoreInput) -> [CoreAction] {
        t += 20
        let now = Instant(microseconds: t), wall = RealtimeInstant(microsecondsSinceEpoch: 1_700_000_000_000_000 + t)
        let actions = core.handle(input, now: now, wall: wall)
        if recorder.append(input, monotonic: now, realtime: wall, actions: actions) { recorder.startSegment(core) }
        if recorder.hasBlockToCompact, let (block, entries) = recorder.blockToCompact,
           let bytes = try? InputRecorder.encode(block: entries) {
            recorder.compacted(block: block, bytes)
        }
        return actions
    }
    func call(_ input: Input) -> [CoreAction] {
        request += 1
        return feed(.lifecycle(input, request: RequestID(request), from: origin))
    }
    /// Acknowledges what needs it, reports no locks held and confirms freezes (as the cgroup freezer done at once), until nothing is left to answer.
    func settle(_ first: [CoreAction]) {
        var pending = first
        while !pending.isEmpty {
            var next: [CoreAction] = []
            for action in pending {
                switch action {
                case .perform(.deliver(_, _, let event), _, _) where event.needsAck:
                    next += call(.eventAcknowledged(event.id))
                case .perform(.observeLocks(let a, _), _, _):
                    next += feed(.lifecycle(.locksObserved(a, LockObservation()), request: nil, from: nil))
                case .perform(.freeze(let a, _, _), _, _):
                    // The freezer froze it at once (the daemon's `.freeze`: no part awaited).
                    next += feed(.lifecycle(.freezeConfirmed(a), request: nil, from: nil))
                default: break
                }
            }
            pending = next
        }
    }
    _ = call(.appsRegistered(ids.map { AppManifest(id: $0, lifecycleAware: true) }))
    for (k, id) in ids.enumerated() {
        settle(call(.launchRequested(id, background: k > 0, exclusive: false)))
        settle(call(.appLaunched(id, pid: Int32(100 + k))))
        settle(call(.appCheckedIn(id, connection: ConnectionID(UInt64(7 + k)), pid: Int32(100 + k))))
    }
    var timed: [Int64] = []
    timed.reserveCapacity(cycles)
    for _ in 0..<cycles {
        settle(call(.backgroundRequested(app)))
        // The grace period ends (and with it every other deadline due).
        while core.lifecycle.app(app, now: Instant(microseconds: t))?.state != .suspended, let next = core.peekNextDeadline() {
            t = Swift.max(t, next.microseconds)
            settle(feed(.lifecycle(.deadlineReached, request: nil, from: nil)))
        }
        guard core.lifecycle.app(app, now: Instant(microseconds: t))?.state == .suspended else {
            fail("the app was not suspended: \(String(describing: core.lifecycle.app(app, now: Instant(microseconds: t))?.state))")
        }
        if sleepMS > 0 { usleep(UInt32(sleepMS * 1000)) }
        let t0 = monoNS()
        let actions = resumeCoreForeground { call(.foregroundRequested(app, exclusive: true)) }
        timed.append(monoNS() - t0)
        guard actions.contains(where: { if case .perform(.thaw, _, _) = $0 { return true } else { return false } }) else {
            fail("Foreground did not thaw the app")
        }
        settle(actions)
    }
    timed.sort()
    emit([
        "cycles": .int(Int64(cycles)), "sleep_ms": .int(Int64(sleepMS)), "apps": .int(Int64(ids.count)),
        "foreground_ns_p50": .int(timed[timed.count / 2]), "foreground_ns_p90": .int(timed[timed.count * 9 / 10]),
        "foreground_ns_min": .int(timed[0]),
    ])
}

/// The timed `Foreground` (a function of its own, so that callgrind can count it alone).
@inline(never)
func resumeCoreForeground(_ body: () -> [CoreAction]) -> [CoreAction] { body() }
