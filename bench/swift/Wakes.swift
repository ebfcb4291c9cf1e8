import BGTaskCore
import BGTaskProtocol

extension BenchTool {
    /// SPEC §16's wake discipline, on the pure refresh machine with a stepped clock: `apps` apps, each with a
    /// refresh request every 15 min (resubmitted 15 min after each run, first dates spread over 15 min),
    /// over `hours` simulated hours, once with `WakeAlignmentSec=alignment` s and once without. A wake is
    /// one firing of the wall-clock timer that ran at least one task.
    static func wakeDiscipline(apps: Int, hours: Int, alignment: Int64) {
        let aligned = simulateWakes(apps: apps, hours: hours, alignment: .seconds(alignment))
        let plain = simulateWakes(apps: apps, hours: hours, alignment: .zero)
        emit([
            "apps": .int(Int64(apps)), "hours": .int(Int64(hours)), "alignment_s": .int(alignment),
            "aligned_wakes": .int(aligned.wakes), "aligned_tasks": .int(aligned.tasks),
            "unaligned_wakes": .int(plain.wakes), "unaligned_tasks": .int(plain.tasks),
        ])
    }

    static func simulateWakes(apps count: Int, hours: Int, alignment: TimeSpan) -> (wakes: Int64, tasks: Int64) {
        let ids = (0..<count).compactMap { AppID("org.bench.Refresh\($0)") }
        var config = RefreshConfig(minimumRefreshInterval: .minutes(15))
        for id in ids {
            config.apps[id] = RefreshConfig.App(permittedIdentifiers: ["\(id).refresh"], backgroundModes: [.fetch])
        }
        config.energy = EnergyPolicyConfig(quotas: [:], remoteWakesPerHour: nil, wakeAlignment: alignment)
        var machine = RefreshMachine(config: config)
        var wall = RealtimeInstant(microsecondsSinceEpoch: 1_800_000_123_456_789)
        var mono = Instant(microseconds: 1_000_000)
        let facts: RefreshMachine.Facts = { _ in RefreshAppFacts(state: .suspended) }
        func now() -> RefreshNow { RefreshNow(wall: wall, monotonic: mono) }
        _ = machine.handle(.stateLoaded(RefreshState()), now: now(), facts: facts)
        _ = machine.handle(.started(detectedPower: true), now: now(), facts: facts)
        // A fixed spread of first dates (a linear congruential sequence), so both runs see the same fleet.
        var seed: UInt64 = 42
        for id in ids {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            let offset = TimeSpan.microseconds(Int64((seed >> 33) % 900_000_000))
            let request = TaskRequest(identifier: "\(id).refresh", kind: .refresh, earliestBegin: wall + offset)
            _ = machine.handle(.taskSubmitted(id, request), now: now(), facts: facts)
        }
        let end = wall + .minutes(Int64(hours) * 60)
        var wakes: Int64 = 0
        var tasks: Int64 = 0
        while let next = machine.nextWallDeadline, next <= end {
            mono = mono + TimeSpan.microseconds(Swift.max(0, next.microsecondsSinceEpoch - wall.microsecondsSinceEpoch))
            wall = Swift.max(wall, next)
            let actions = machine.handle(.wallDeadlineReached, now: now(), facts: facts)
            let runs = actions.compactMap { if case .run(let r) = $0 { return r } else { return nil } }
            if !runs.isEmpty { wakes += 1 }
            tasks += Int64(runs.count)
            // Each app completes at once and asks again for 15 min later.
            for run in runs {
                let request = TaskRequest(identifier: run.identifier, kind: .refresh, earliestBegin: wall + .minutes(15))
                _ = machine.handle(.taskSubmitted(run.app, request), now: now(), facts: facts)
            }
        }
        return (wakes, tasks)
    }
}
