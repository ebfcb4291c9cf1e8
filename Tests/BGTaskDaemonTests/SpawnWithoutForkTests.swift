import Foundation
import Testing
import BGTaskConfig
import BGTaskLaunch
@testable import BGTaskDaemon

/// A shared page that `pthread_atfork` child handlers count into: a forked child writes to the parent's
/// page too (MAP_SHARED), so the parent sees how many forks ran its handlers.
nonisolated(unsafe) private var forkCounter: UnsafeMutablePointer<Int32>? = {
    let page = mmap(nil, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0)
    guard let page, page != MAP_FAILED else { return nil }
    let counter = page.bindMemory(to: Int32.self, capacity: 1)
    counter.pointee = 0
    pthread_atfork(nil, nil, { forkCounter?.pointee += 1 })
    return counter
}()

/// issue 15: an app is started without forking the spawner (clone3 with CLONE_VM | CLONE_VFORK, the
/// child born in the app's cgroup with CLONE_INTO_CGROUP), in the daemon and in bgtaskd-launcher alike
/// (both use `AppSpawner.spawn`). In SpawnDescriptorTests' suite, which is serialized: its test takes
/// the first new child of this process for the one it spawned, so no other spawn may run meanwhile.
extension SpawnDescriptorTests {
    static func waitExit(_ pid: Int32) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status
    }

    /// fork(2) copies the spawner and runs every `pthread_atfork` child handler of every library in it
    /// (libdispatch's among them) in the copy; a spawn that shares the spawner's memory until exec
    /// runs none. Fails with the fork-based spawner (the counter is 1).
    @Test func theSpawnerIsNotForked() throws {
        let counter = try #require(forkCounter)
        counter.pointee = 0
        let r = AppSpawner.spawn(path: "/bin/true", argv: ["true"], environment: [], workingDirectory: nil,
                                 user: nil, cgroupProcsFD: nil)
        let pid = try #require(try? r.get())
        let status = Self.waitExit(pid)
        #expect(status == 0, "the child ran /bin/true")
        #expect(counter.pointee == 0, "no atfork handler ran: nothing of the spawner was forked")
    }

    /// The steps the child takes still report where they failed, through the shared memory now.
    @Test func aFailedStepIsStillReportedByName() throws {
        let missing = AppSpawner.spawn(path: "/nonexistent/bgtaskd-app", argv: ["x"], environment: [],
                                       workingDirectory: nil, user: nil, cgroupProcsFD: nil)
        guard case .failure(let e) = missing else { Issue.record("spawned a missing program"); return }
        #expect(e.kind == .spawnFailed)
        #expect(e.message.contains("No such file or directory"), "\(e.message)")
        let badCwd = AppSpawner.spawn(path: "/bin/true", argv: ["true"], environment: [],
                                      workingDirectory: "/nonexistent/dir", user: nil, cgroupProcsFD: nil)
        guard case .failure(let c) = badCwd else { Issue.record("chdir to a missing directory succeeded"); return }
        #expect(c.message.contains("WorkingDirectory=/nonexistent/dir"), "\(c.message)")
    }

    /// With a cgroup, the child is in it from its first instruction: what it reads in /proc/self/cgroup
    /// before anything else is the app's cgroup, and the spawner's own cgroup never held it.
    @Test func theChildIsBornInTheAppsCgroup() throws {
        let mounts = (try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8)) ?? ""
        guard getuid() == 0, let mount = Cgroup.v2Mount(mounts: mounts) else {
            // Recorded, not passed silently: this machine has no writable cgroup2 mount.
            Issue.record("needs root and a cgroup2 mount")
            return
        }
        let dir = mount + "/bgtaskd-test-spawn-\(getpid())"
        #expect(Cgroup.makeDirectory(dir) == 0)
        defer { _ = rmdir(dir) }
        let procs = open(dir + "/cgroup.procs", O_WRONLY | O_CLOEXEC)
        try #require(procs >= 0)
        defer { close(procs) }
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("bgtaskd-spawn-cg-\(getpid())").path
        defer { unlink(out) }
        for round in 0..<2 {
            unlink(out)
            let r = AppSpawner.spawn(path: "/bin/sh", argv: ["sh", "-c", "cat /proc/self/cgroup > \(out)"], environment: [],
                                     workingDirectory: nil, user: nil, cgroupProcsFD: procs)
            let pid = try #require(try? r.get())
            #expect(Self.waitExit(pid) == 0, "round \(round): the app ran to its end")
            let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
            #expect(text.split(separator: "\n").contains("0::/bgtaskd-test-spawn-\(getpid())"), "round \(round): \(text)")
            // An app's cgroup is killed when it terminates (cgroup.kill) and reused by its next launch:
            // on kernels whose cgroup kill_seq check kills a child cloned into such a cgroup at birth,
            // the spawn must still start the app (round 1).
            #expect(Cgroup.write(dir + "/cgroup.kill", "1") == 0)
        }
    }

    /// The child runs on a stack the spawner keeps for the next spawn; a spawn on another thread while it is
    /// in use maps one of its own. Two threads spawning at once, many times: every child runs its own
    /// command line to its own exit status (children sharing one stack at once would run each other's).
    @Test func spawnsFromTwoThreadsAtOnceEachRunTheirOwnProgram() throws {
        nonisolated(unsafe) let results = UnsafeMutablePointer<(pid: Int32, expected: Int32)>.allocate(capacity: 2 * 60)
        defer { results.deallocate() }
        DispatchQueue.concurrentPerform(iterations: 2) { thread in
            for n in 0..<60 {
                let code = Int32(thread * 60 + n) % 250 + 1
                let r = AppSpawner.spawn(path: "/bin/sh", argv: ["sh", "-c", "exit \(code)"], environment: [],
                                         workingDirectory: nil, user: nil, cgroupProcsFD: nil)
                results[thread * 60 + n] = ((try? r.get()) ?? -1, code)
            }
        }
        for i in 0..<(2 * 60) {
            let (pid, expected) = results[i]
            try #require(pid > 0, "spawn \(i) failed")
            let status = Self.waitExit(pid)
            #expect(status & 0x7f == 0 && (status >> 8) & 0xff == expected, "spawn \(i): status \(status), not exit \(expected)")
        }
    }

    /// The energy account's reading at a launch is skipped for the process the daemon started a moment ago
    /// (it would read 0 ticks): only that pid, only just after its spawn.
    @Test func theLauncherTellsAProcessItStartedJustNow() throws {
        let launcher = Launcher(queue: DispatchQueue(label: "bgtaskd.test.just-now"))
        let manifest = AppManifestFile(id: "org.example.JustNow", exec: ["/bin/sleep", "5"])
        let pid = try launcher.spawn(manifest, socketPath: "/nonexistent/socket", cgroupProcsFD: nil).get()
        defer {
            kill(pid, SIGKILL)
            _ = Self.waitExit(pid)
        }
        let at = try #require(launcher.spawnedAtUSec(pid))
        let after = Monotonic.nowUSec()
        #expect(at <= after)
        #expect(launcher.startedJustNow(pid, nowUSec: at + 999))
        #expect(!launcher.startedJustNow(pid, nowUSec: at + 1_000), "a millisecond later it may have used a tick")
        #expect(!launcher.startedJustNow(pid + 1, nowUSec: at))
        #expect(!launcher.startedJustNow(getpid(), nowUSec: at))
    }
}
