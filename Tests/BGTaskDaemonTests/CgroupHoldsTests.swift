import BGTaskConfig
import Testing
@testable import BGTaskDaemon

#if canImport(Glibc)
import Glibc
#endif

/// The energy measurement finds the app's pid in its cgroup from `/proc/PID/cgroup` (one small read) rather
/// than by listing the cgroup's processes and directories.
@Suite struct CgroupHoldsTests {
    @Test func aProcessIsHeldByItsCgroupAndItsAncestorsOnly() throws {
        let mount = try #require(FileIO.read("/proc/self/mounts").flatMap { Cgroup.v2Mount(mounts: $0) })
        let own = try #require(FileIO.read("/proc/self/cgroup").flatMap { Cgroup.ownPath(selfCgroup: $0) })
        let dir = CgroupLayout.join(mount, own)
        #expect(Cgroup.holds(dir, pid: getpid(), mount: mount))
        if own != "/" {
            #expect(Cgroup.holds(String(dir[..<(dir.lastIndex(of: "/") ?? dir.endIndex)]), pid: getpid(), mount: mount))
            // A sibling whose name begins with this cgroup's: not an ancestor.
            #expect(!Cgroup.holds(String(dir.dropLast()), pid: getpid(), mount: mount))
        }
        #expect(!Cgroup.holds(dir + "/below", pid: getpid(), mount: mount))
        #expect(!Cgroup.holds(dir, pid: getpid(), mount: nil))
    }

    @Test func aSmallKernelFileIsReadWholeAndALongOneToo() throws {
        let stat = try #require(FileIO.read("/proc/self/stat"))
        #expect(stat.hasPrefix("\(getpid()) ("))
        // Longer than the buffer on the stack.
        let maps = try #require(FileIO.read("/proc/self/maps"))
        #expect(maps.utf8.count > FileIO.stackBytes)
        #expect(maps.hasSuffix("\n"))
        #expect(FileIO.read("/proc/self/no-such-file") == nil)
    }
}
