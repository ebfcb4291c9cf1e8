import Dispatch
import Foundation
import Testing
@testable import BGTaskDaemon

/// The heap a burst freed is given back once the daemon is at rest after it (BurstTrim.swift): after
/// `threshold` inputs and then `quiet` without one, the trim runs once; fewer inputs arm nothing; inputs
/// that keep coming keep it waiting; and nothing stays armed after it (an idle daemon sets no timer).
@Suite struct BurstTrimTests {
    final class Count: @unchecked Sendable {
        private let lock = NSLock()
        private var n = 0
        let ran = DispatchSemaphore(value: 0)
        func add() {
            lock.lock()
            n += 1
            lock.unlock()
            ran.signal()
        }
        var value: Int {
            lock.lock()
            defer { lock.unlock() }
            return n
        }
    }

    @Test func aBurstIsTrimmedOnceWhenQuietAndAFewInputsArmNothing() throws {
        let queue = DispatchQueue(label: "bgtaskd.test.burst-trim")
        let trims = Count()
        let burst = BurstTrim(threshold: 100, quiet: .seconds(1), trim: { trims.add() })
        queue.sync { for _ in 0..<99 { burst.note(on: queue) } }
        #expect(queue.sync { burst.armed } == false, "99 inputs are not a burst")
        #expect(trims.ran.wait(timeout: .now() + .milliseconds(1500)) == .timedOut)

        // The 100th arms it; inputs keep coming for a while (each within the quiet time): no trim yet.
        queue.sync { burst.note(on: queue) }
        #expect(queue.sync { burst.armed })
        for _ in 0..<6 {
            queue.sync { burst.note(on: queue) }
            #expect(trims.value == 0, "inputs within the quiet time: the burst goes on")
            // The scenario: an input every 10 ms, far under the 1 s quiet time (a stall of 0.9 s would be
            // needed for the burst to look over).
            Thread.sleep(forTimeInterval: 0.01)
        }
        // Then quiet: one trim, and nothing armed after it.
        #expect(trims.ran.wait(timeout: .now() + 10) == .success, "the burst's end trims")
        #expect(trims.value == 1)
        #expect(queue.sync { burst.armed } == false)
        #expect(trims.ran.wait(timeout: .now() + .milliseconds(200)) == .timedOut, "one trim per burst")

        // The count starts again: another burst trims again.
        queue.sync { for _ in 0..<100 { burst.note(on: queue) } }
        #expect(trims.ran.wait(timeout: .now() + 10) == .success)
        #expect(trims.value == 2)
    }
}
