import BGTaskCore
import Testing

/// The shell answers an allowed control call from the core's query (`allowsControlCall`) without feeding
/// it, as it does for App calls: the query must say what the fed input decides, for every caller.
@Suite struct ControlCallQueryTests {
    @Test(arguments: [nil, 0, 500] as [UInt32?])
    func theQueryAgreesWithTheDecision(controlGroup: UInt32?) {
        var h = Harness(config: LifecycleConfig(controlGroup: controlGroup), manifests: [AppManifest(id: mail, uid: 1000)])
        for uid in [0, 1000, 2000] as [UInt32] {
            for gid in [0, 20, 500, 1000] as [UInt32] {
                for groups in [[], [20], [500], [20, 500, 1000]] as [[UInt32]] {
                    let c = Caller(pid: 77, uid: uid, gid: gid)
                    let fed = h.send(.controlCallReceived(caller: c, groups: groups)).replies == [.ok]
                    #expect(h.machine.allowsControlCall(c, groups: groups) == fed,
                            "uid \(uid) gid \(gid) groups \(groups) ControlGroup=\(String(describing: controlGroup))")
                }
            }
        }
    }
}
