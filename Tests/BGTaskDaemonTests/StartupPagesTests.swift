import BGTaskConfig
import Testing
@testable import BGTaskDaemon

/// Unmapping the code start-up touched (StartupPages.swift) leaves a process that runs on: the pages it
/// uses again are mapped again from the page cache, and no private page (data, relocations) is dropped.
@Suite struct StartupPagesTests {
    @Test func releasesMappedCodeAndTheProcessRunsOn() {
        let before = String(repeating: "x", count: 3) + "\(42)"
        let released = StartupPages.release()
        #expect(released > 0, "no code was mapped in this process?")
        #expect(before == "xxx42")
        #expect(FileIO.read("/proc/self/status")?.contains("VmRSS:") == true)
        #expect(StartupPages.release() >= 0)
    }
}
