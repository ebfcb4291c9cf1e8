import Foundation
import Testing
@testable import BGTaskDaemon

#if canImport(Glibc)
import Glibc
#endif

/// SPEC §16: a process's CPU time as the energy ledger reads it from `/proc/PID/stat` (utime, stime, cutime,
/// cstime: fields 14–17, counted after the command's last closing parenthesis).
@Suite struct EnergyMeterTests {
    @Test func theFourTimesAreReadAfterTheCommandWhateverItHolds() {
        // A command with spaces and parentheses; fields 3–13, then 100 20 3 4 ticks, then the rest.
        let line = "4242 (we (ird) na me) S 1 2 3 4 5 6 7 8 9 10 100 20 3 4 20 0 1 0 12345 67890 12 18446744073709551615\n"
        #expect(EnergyMeter.statUsage(line, ticksPerSecond: 100) == 1_270_000)
        #expect(EnergyMeter.statUsage(line, ticksPerSecond: 1000) == 127_000)
        // Ends right after cstime.
        #expect(EnergyMeter.statUsage("1 (x) S 1 2 3 4 5 6 7 8 9 10 1 2 3 4", ticksPerSecond: 100) == 100_000)
    }

    @Test func aLineThatIsNotAStatLineIsNoReading() {
        #expect(EnergyMeter.statUsage("", ticksPerSecond: 100) == nil)
        #expect(EnergyMeter.statUsage("1 (x) S 1 2 3", ticksPerSecond: 100) == nil)
        #expect(EnergyMeter.statUsage("1 (x) S 1 2 3 4 5 6 7 8 9 10 1 2 3", ticksPerSecond: 100) == nil)
        #expect(EnergyMeter.statUsage("1 (x) S 1 2 3 4 5 6 7 8 9 10 1 -2 3 4 5", ticksPerSecond: 100) == nil)
        #expect(EnergyMeter.statUsage("1 (x) S 1 2 3 4 5 6 7 8 9 10 1 2x 3 4 5", ticksPerSecond: 100) == nil)
        #expect(EnergyMeter.statUsage("no parenthesis 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15", ticksPerSecond: 100) == nil)
        #expect(EnergyMeter.statUsage("1 (x) S 1 2 3 4 5 6 7 8 9 10 1 2 3 4", ticksPerSecond: 0) == nil)
    }

    /// The real file of this process agrees with times(2), which reads the same counters.
    @Test func thisProcessReadsWhatTimesSays() {
        var x: UInt64 = 1
        let until = Date().addingTimeInterval(0.2)
        while Date() < until { for _ in 0..<10_000 { x = x &* 6364136223846793005 &+ 1 } }
        #expect(x != 0)
        var t = tms()
        _ = times(&t)
        let ticks = Int64(sysconf(Int32(_SC_CLK_TCK)))
        let viaTimes = Int64(t.tms_utime + t.tms_stime + t.tms_cutime + t.tms_cstime) * 1_000_000 / ticks
        let read = EnergyMeter.processUsage(getpid())
        #expect(read != nil)
        // The other test threads run on meanwhile: allow 0.1 s.
        #expect(abs((read ?? 0) - viaTimes) <= 100_000, "read \(read ?? -1) µs, times(2) \(viaTimes) µs")
        #expect((read ?? 0) >= 100_000)
    }
}
