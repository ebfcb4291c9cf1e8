@testable import BGTaskDaemon
import BGTaskCore
import Testing

/// The `/proc/locks` parser over samples taken from this machine's kernel (6.18): POSIX, FLOCK, OFDLCK
/// (pid -1) and LEASE locks, each with a `->` waiter line, and a lease breaker that names no file.
@Suite struct ProcLocksTests {
    static let sample = """
        1: POSIX  ADVISORY  WRITE 32384 fe:00:16228619 0 EOF
        1: -> POSIX  ADVISORY  WRITE 32385 fe:00:16228619 0 EOF
        2: POSIX  ADVISORY  WRITE 31507 fe:00:5376264 1073741824 1073742335
        3: FLOCK  ADVISORY  WRITE 31507 fe:00:16220680 0 EOF
        5: OFDLCK ADVISORY  WRITE -1 fe:00:16228621 0 EOF
        5: -> OFDLCK ADVISORY  WRITE -1 fe:00:16228621 0 EOF
        6: FLOCK  ADVISORY  WRITE 32386 fe:00:16228620 0 EOF
        6: -> FLOCK  ADVISORY  WRITE 32387 fe:00:16228620 0 EOF
        7: LEASE  BREAKING  UNLCK 32751 fe:00:16228373 0 EOF
        7: -> LEASE  BREAKER   WRITE 32752 <none>:0 0 EOF
        8: LEASE  ACTIVE    READ 32576 fe:00:16228373 0 EOF
        """

    @Test func everyKindAndWaiterLineIsParsed() {
        let entries = ProcLocks.parse(Self.sample)
        #expect(entries.count == 11)
        #expect(entries[0] == ProcLockEntry(id: 1, waiter: false, kind: "POSIX", pid: 32384, device: "fe:00", inode: 16228619))
        #expect(entries[1] == ProcLockEntry(id: 1, waiter: true, kind: "POSIX", pid: 32385, device: "fe:00", inode: 16228619))
        #expect(entries[4].kind == "OFDLCK" && entries[4].pid == -1 && !entries[4].waiter)
        #expect(entries[5].kind == "OFDLCK" && entries[5].pid == -1 && entries[5].waiter)
        #expect(entries[9] == ProcLockEntry(id: 7, waiter: true, kind: "LEASE", pid: 32752, device: nil, inode: 0))
        #expect(entries[10].kind == "LEASE" && entries[10].pid == 32576)
    }

    @Test func malformedLinesAreSkipped() {
        let text = "garbage\n1: POSIX\nx: POSIX ADVISORY WRITE 1 fe:00:1 0 EOF\n2: POSIX ADVISORY WRITE nope fe:00:1 0 EOF\n3: FLOCK ADVISORY WRITE 7 fe:00:zz 0 EOF\n\n"
        #expect(ProcLocks.parse(text).isEmpty)
    }

    @Test func aLockOfTheAppThatOthersWaitForIsContended() {
        let seen = ProcLocks.observe(ProcLocks.parse(Self.sample), pids: [32386], ofdFiles: { [:] })
        #expect(seen.held == 1)
        #expect(seen.contended == [LockContention(kind: "FLOCK", device: "fe:00", inode: 16228620, holder: 32386, waiter: 32387)])
    }

    @Test func aWaiterInsideTheAppIsNoContention() {
        let seen = ProcLocks.observe(ProcLocks.parse(Self.sample), pids: [32384, 32385], ofdFiles: { [:] })
        #expect(seen.held == 1)
        #expect(seen.contended.isEmpty)
    }

    @Test func anUncontendedLockIsHeldOnly() {
        let seen = ProcLocks.observe(ProcLocks.parse(Self.sample), pids: [31507], ofdFiles: { [:] })
        #expect(seen.held == 2)
        #expect(seen.contended.isEmpty)
    }

    @Test func aLeaseBeingBrokenIsContended() {
        let seen = ProcLocks.observe(ProcLocks.parse(Self.sample), pids: [32751], ofdFiles: { [:] })
        #expect(seen.contended.map(\.waiter) == [32752])
        #expect(seen.contended.first?.kind == "LEASE")
    }

    @Test func anOFDLockIsFoundThroughFdinfoAndItsWaiterHasNoPid() {
        var asked = 0
        let seen = ProcLocks.observe(ProcLocks.parse(Self.sample), pids: [4242], ofdFiles: {
            asked += 1
            return ["fe:00:16228621": 4242]
        })
        #expect(seen.held == 1)
        #expect(seen.contended == [LockContention(kind: "OFDLCK", device: "fe:00", inode: 16228621, holder: 4242, waiter: nil)])
        #expect(asked == 1)
    }

    @Test func fdinfoIsReadOnlyWhenAnOFDLockIsListed() {
        var asked = 0
        let text = "1: POSIX  ADVISORY  WRITE 10 fe:00:1 0 EOF\n1: -> POSIX  ADVISORY  WRITE 11 fe:00:1 0 EOF\n"
        let seen = ProcLocks.observe(ProcLocks.parse(text), pids: [99], ofdFiles: { asked += 1; return [:] })
        #expect(seen == LockObservation())
        #expect(asked == 0)
    }

    @Test func anAppWithNoProcessesReadsNothing() {
        #expect(ProcLocks.read(pids: []) == LockObservation())
    }
}
