import BGTaskCore
import Dispatch
import Foundation
import Synchronization
import Testing
@testable import BGTaskDaemon

/// SPEC §14: the lock checks before freezes are read off the daemon's queue, one read of `/proc/locks` for
/// every check waiting when it begins (``LockReads``): apps backgrounded together do not each wait for the
/// reads of all those before them. Real processes and a real `flock`.
@Suite(.serialized) struct LockReadsTests {
    @Test func oneReadServesEveryCheckWaitingWhenItBegins() throws {
        let path = NSTemporaryDirectory() + "bgtaskd-lockreads-\(UUID().uuidString)"
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        defer { try? FileManager.default.removeItem(atPath: path) }
        // An app whose tree holds a real lock, and one whose tree holds none.
        let holder = try ShellTree("flock \(path) sleep 30 & sleep 0.3")
        defer { holder.stop() }
        let idle = try ShellTree("sleep 30 & sleep 0.1")
        defer { idle.stop() }

        let queue = DispatchQueue(label: "bgtaskd.test.lockreads")
        let batches = Mutex<[[(AppID, LockObservation)]]>([])
        let arrived = DispatchSemaphore(value: 0)
        let reads = LockReads(queue: queue) { seen in
            dispatchPrecondition(condition: .onQueue(queue))
            batches.withLock { $0.append(seen) }
            arrived.signal()
        }
        // The read queue is busy (a read under way): the checks asked for meanwhile wait together.
        let busy = DispatchSemaphore(value: 0)
        procLocksQueue.async { busy.wait() }
        let apps = (0..<5).map { AppID("org.example.Lock\($0)")! }
        for (k, app) in apps.enumerated() { reads.ask(app, .tree(root: k == 2 ? holder.pid : idle.pid, extra: [])) }
        busy.signal()
        #expect(arrived.wait(timeout: .now() + 10) == .success)
        let first = batches.withLock { $0 }
        #expect(first.count == 1, "one read for the five")
        #expect(first.first?.map(\.0) == apps, "in the order asked for")
        #expect(first.first?.map(\.1.held) == [0, 0, 1, 0, 0], "each its own tree's locks")

        // Asked for alone, later: a read of its own, by pids this time.
        let lockPids = ProcessTable.read().tree(roots: [holder.pid]).sorted()
        reads.ask(apps[0], .pids(lockPids))
        #expect(arrived.wait(timeout: .now() + 10) == .success)
        let all = batches.withLock { $0 }
        #expect(all.count == 2 && all.last?.count == 1 && all.last?.first?.1.held == 1)
    }
}
