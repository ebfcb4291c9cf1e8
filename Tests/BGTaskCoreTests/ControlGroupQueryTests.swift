import BGTaskCore
import Testing

/// The shell reads a control caller's supplementary groups (`/proc/PID/status`) only when the core's
/// `controlCallNeedsGroups` says they can change its answer; when it says no, the decision on `[]` must be
/// the decision on any groups, and when it says yes, some groups must change it.
@Suite struct ControlGroupQueryTests {
    func caller(_ uid: UInt32, gid: UInt32) -> Caller { Caller(pid: 77, uid: uid, gid: gid) }

    func decision(_ h: inout Harness, _ c: Caller, _ groups: [UInt32]) -> Bool {
        h.send(.controlCallReceived(caller: c, groups: groups)).replies == [.ok]
    }

    @Test(arguments: [nil, 0, 500] as [UInt32?])
    func groupsAreReadOnlyWhenTheyCanChangeTheAnswer(controlGroup: UInt32?) {
        var h = Harness(config: LifecycleConfig(controlGroup: controlGroup), manifests: [AppManifest(id: mail, uid: 1000)])
        let groupSets: [[UInt32]] = [[], [20], [500], [0], [20, 500, 1000]]
        for uid in [0, 1000, 2000] as [UInt32] {
            for gid in [0, 20, 500, 1000] as [UInt32] {
                let c = caller(uid, gid: gid)
                let outcomes = Set(groupSets.map { decision(&h, c, $0) })
                let needs = h.machine.controlCallNeedsGroups(c)
                #expect(needs == (outcomes.count > 1), "uid \(uid) gid \(gid) ControlGroup=\(String(describing: controlGroup))")
                if !needs {
                    #expect(outcomes == [decision(&h, c, [])])
                }
            }
        }
    }

    @Test func rootAndNoControlGroupNeedNoGroups() {
        let none = Harness(config: LifecycleConfig(), manifests: [])
        #expect(!none.machine.controlCallNeedsGroups(caller(1000, gid: 1000)))
        let group = Harness(config: LifecycleConfig(controlGroup: 500), manifests: [])
        #expect(!group.machine.controlCallNeedsGroups(caller(0, gid: 0)))
        #expect(!group.machine.controlCallNeedsGroups(caller(1000, gid: 500)))
        #expect(group.machine.controlCallNeedsGroups(caller(1000, gid: 1000)))
    }
}
