import Testing
@testable import BGTaskDaemon

/// The pure parts of the cgroup freezer and the memory-pressure watch (issue 5): where the subtree is,
/// parsing of the kernel's files, the trigger and the episode logic. The behaviour on real cgroups and
/// processes is in IntegrationTests/integration/test_freezer.py.
@Suite struct CgroupParsingTests {
    static let hybridMounts = """
        tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0
        cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0
        cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0
        """

    @Test func findsTheCgroup2MountAmongV1Mounts() {
        #expect(Cgroup.v2Mount(mounts: Self.hybridMounts) == "/sys/fs/cgroup/unified")
        #expect(Cgroup.v2Mount(mounts: "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid 0 0\n") == "/sys/fs/cgroup")
        #expect(Cgroup.v2Mount(mounts: "cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n") == nil)
    }

    @Test func decodesOctalEscapesInMountPoints() {
        #expect(Cgroup.v2Mount(mounts: "none /mnt/my\\040cgroups cgroup2 rw 0 0") == "/mnt/my cgroups")
    }

    @Test func readsTheV2LineOfProcSelfCgroup() {
        let text = "9:name=systemd:/\n4:memory:/x\n0::/system.slice/bgtaskd.service\n"
        #expect(Cgroup.ownPath(selfCgroup: text) == "/system.slice/bgtaskd.service")
        #expect(Cgroup.ownPath(selfCgroup: "0::/\n") == "/")
        #expect(Cgroup.ownPath(selfCgroup: "0::/a/b (deleted)\n") == "/a/b")
        #expect(Cgroup.ownPath(selfCgroup: "1:cpu:/\n") == nil)
    }

    @Test func parsesCgroupEvents() {
        #expect(Cgroup.parseEvents("populated 1\nfrozen 0\n") == Cgroup.Events(populated: true, frozen: false))
        #expect(Cgroup.parseEvents("populated 0\nfrozen 1\n") == Cgroup.Events(populated: false, frozen: true))
        #expect(Cgroup.parseEvents("populated 1\n") == nil)
    }

    /// The byte parser reads what splitting into lines and words read: the same answer for every line
    /// shape — spaces doubled or leading, a value other than 0 or 1, a key repeated, a third word, lines
    /// empty or without their newline, other keys, non-ASCII bytes.
    @Test func parsesCgroupEventsAsSplittingWould() {
        func split(_ text: String) -> Cgroup.Events? {
            var populated: Bool?
            var frozen: Bool?
            for line in text.split(separator: "\n") {
                let kv = line.split(separator: " ")
                guard kv.count == 2 else { continue }
                switch kv[0] {
                case "populated": populated = kv[1] == "1"
                case "frozen": frozen = kv[1] == "1"
                default: break
                }
            }
            guard let populated, let frozen else { return nil }
            return Cgroup.Events(populated: populated, frozen: frozen)
        }
        let lines = ["populated 1", "populated 0", "frozen 1", "frozen 0", "populated  1", " frozen 1 ", "frozen 10",
                     "frozen 1 x", "populated", "", "frozen", "frozenx 1", "populated é", "x y", "frozen\t1", "populated 1 "]
        var checked = 0
        for a in lines {
            for b in lines {
                for c in ["", "frozen 0", "populated 1"] {
                    for text in [a + "\n" + b + "\n" + c + "\n", a + "\n" + b + "\n" + c, "\n" + a + "\n\n" + b + "\n" + c] {
                        #expect(Cgroup.parseEvents(text) == split(text), "\(text.debugDescription)")
                        checked += 1
                    }
                }
            }
        }
        #expect(checked == lines.count * lines.count * 9)
    }
}

@Suite struct CgroupLayoutTests {
    static let mounts = "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n"

    @Test func delegatedServiceCgroupMovesTheDaemonIntoALeaf() throws {
        let layout = try CgroupLayout.plan(
            cgroupRoot: nil, mounts: Self.mounts, selfCgroup: "0::/system.slice/bgtaskd.service\n"
        ).get()
        #expect(layout.base == "/sys/fs/cgroup/system.slice/bgtaskd.service")
        #expect(layout.apps == "/sys/fs/cgroup/system.slice/bgtaskd.service/apps")
        #expect(layout.daemonLeaf == "/sys/fs/cgroup/system.slice/bgtaskd.service/daemon")
        #expect(layout.moveSelf)
        #expect(layout.origin == .delegated)
        #expect(layout.appPath("org.example.Mail") == "/sys/fs/cgroup/system.slice/bgtaskd.service/apps/org.example.Mail")
    }

    @Test func alreadyInTheDaemonLeafUsesItsParent() throws {
        let layout = try CgroupLayout.plan(
            cgroupRoot: nil, mounts: Self.mounts, selfCgroup: "0::/system.slice/bgtaskd.service/daemon\n"
        ).get()
        #expect(layout.base == "/sys/fs/cgroup/system.slice/bgtaskd.service")
        #expect(!layout.moveSelf)
    }

    @Test func theRootCgroupIsNotTakenOver() {
        #expect(CgroupLayout.plan(cgroupRoot: nil, mounts: Self.mounts, selfCgroup: "0::/\n") == .failure(.rootCgroup))
        #expect(CgroupLayout.plan(cgroupRoot: nil, mounts: "", selfCgroup: "0::/x\n") == .failure(.noCgroup2Mount))
    }

    @Test func cgroupRootIsAbsoluteOrRelativeToTheMount() throws {
        let absolute = try CgroupLayout.plan(
            cgroupRoot: "/sys/fs/cgroup/bgtaskd-test", mounts: Self.mounts, selfCgroup: "0::/\n"
        ).get()
        #expect(absolute.base == "/sys/fs/cgroup/bgtaskd-test")
        #expect(!absolute.moveSelf)
        #expect(absolute.origin == .cgroupRoot)
        let relative = try CgroupLayout.plan(cgroupRoot: "/bgtaskd", mounts: Self.mounts, selfCgroup: "0::/\n").get()
        #expect(relative.base == "/sys/fs/cgroup/bgtaskd")
        let bare = try CgroupLayout.plan(cgroupRoot: "bgtaskd", mounts: Self.mounts, selfCgroup: "0::/\n").get()
        #expect(bare.base == "/sys/fs/cgroup/bgtaskd")
    }

    /// CgroupRoot= and AdoptFrom= read a path the same way: under the mount point it is a file-system path,
    /// otherwise a path in the hierarchy (as systemd and /proc/PID/cgroup write them).
    @Test func adoptFromAndCgroupRootResolveAlike() {
        let mount = "/sys/fs/cgroup"
        for (value, want) in [
            ("/sys/fs/cgroup/user.slice", "/sys/fs/cgroup/user.slice"), ("/user.slice", "/sys/fs/cgroup/user.slice"),
            ("user.slice", "/sys/fs/cgroup/user.slice"), ("/sys/fs/cgroup", "/sys/fs/cgroup"),
            ("/sys/fs/cgroupx", "/sys/fs/cgroup/sys/fs/cgroupx"),
        ] {
            #expect(AppAdoption.rootPath(adoptFrom: value, mount: mount) == want, "\(value)")
            #expect(CgroupLayout.resolve(value, mount: mount) == want, "\(value)")
        }
    }

    @Test func recognisesCgroupsThatSystemdManages() {
        #expect(CgroupLayout.managedBySystemd("/sys/fs/cgroup/system.slice/bgtaskd.service"))
        #expect(CgroupLayout.managedBySystemd("/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope"))
        #expect(!CgroupLayout.managedBySystemd("/sys/fs/cgroup/unified/bgtaskd-test-1"))
    }

    @Test func cgroupRootThatHoldsTheDaemonMovesItOut() throws {
        let layout = try CgroupLayout.plan(
            cgroupRoot: "/sys/fs/cgroup/bgtaskd", mounts: Self.mounts, selfCgroup: "0::/bgtaskd\n"
        ).get()
        #expect(layout.moveSelf)
    }
}

@Suite struct MemoryPressureTests {
    @Test func triggerIsTheThresholdShareOfTheWindow() {
        let spec = MemoryPressureMonitor.triggerSpec(fraction: 0.10, windowUSec: 1_000_000, unprivileged: false)
        #expect(spec.stallUSec == 100_000 && spec.windowUSec == 1_000_000)
    }

    @Test func unprivilegedWindowsAreRoundedUpToTwoSeconds() {
        let spec = MemoryPressureMonitor.triggerSpec(fraction: 0.10, windowUSec: 1_000_000, unprivileged: true)
        #expect(spec.stallUSec == 200_000 && spec.windowUSec == 2_000_000)
        let kept = MemoryPressureMonitor.triggerSpec(fraction: 0.01, windowUSec: 4_000_000, unprivileged: true)
        #expect(kept.stallUSec == 40_000 && kept.windowUSec == 4_000_000)
    }

    @Test func thresholdsStayWithinTheWindow() {
        #expect(MemoryPressureMonitor.triggerSpec(fraction: 0, windowUSec: 500_000, unprivileged: false).stallUSec == 1)
        #expect(MemoryPressureMonitor.triggerSpec(fraction: 1, windowUSec: 500_000, unprivileged: false).stallUSec == 500_000)
    }
}
