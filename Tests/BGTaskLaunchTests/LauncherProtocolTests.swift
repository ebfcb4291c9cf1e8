import BGTaskConfig
import BGTaskLaunch
import BGTaskProtocol
import Testing

/// io.bgtaskd.Launcher messages: encoding, decoding and validation (what the launcher accepts from the daemon).
@Suite("io.bgtaskd.Launcher")
struct LauncherProtocolTests {
    private let request = SpawnRequest(
        argv: ["/usr/bin/app", "--flag", "two words"], user: .name("alice"), workingDirectory: "/home/alice",
        environment: ["BGTASKD_APP_ID=org.test.A", "PATH=/usr/bin:/bin"], cgroup: "/sys/fs/cgroup/bgtaskd.service/apps/org.test.A")

    @Test func requestRoundTripsThroughTheWire() throws {
        let bytes = request.call.encoded()
        #expect(bytes.last == 0)
        let call = try VarlinkCall.decode(bytes.dropLast())
        #expect(call.method == "io.bgtaskd.Launcher.Spawn")
        #expect(try SpawnRequest(parameters: call.parameters) == request)
    }

    @Test func optionalFieldsMayBeAbsentOrNull() throws {
        let minimal = SpawnRequest(argv: ["app"], user: nil, workingDirectory: nil, environment: [], cgroup: nil)
        #expect(minimal.parameters["user"] == nil)
        #expect(try SpawnRequest(parameters: minimal.parameters) == minimal)
        var withNulls = minimal.parameters
        withNulls["user"] = .null
        withNulls["cgroup"] = .null
        #expect(try SpawnRequest(parameters: withNulls) == minimal)
        let numeric = try SpawnRequest(parameters: ["argv": ["app"], "environment": [], "user": "1000"])
        #expect(numeric.user == .id(1000))
    }

    @Test("invalid requests are refused with InvalidRequest", arguments: [
        (#"{"environment": []}"#, "argv must be an array of strings"),
        (#"{"argv": [], "environment": []}"#, "argv must name an executable"),
        (#"{"argv": [""], "environment": []}"#, "argv must name an executable"),
        (#"{"argv": ["a", 1], "environment": []}"#, "argv must be an array of strings"),
        (#"{"argv": ["a\u0000b"], "environment": []}"#, "argv must not contain NUL"),
        (#"{"argv": ["a"]}"#, "environment must be an array of strings"),
        (#"{"argv": ["a"], "environment": ["NOEQUALS"]}"#, #"environment entries must be NAME=value: "NOEQUALS""#),
        (#"{"argv": ["a"], "environment": ["=x"]}"#, #"environment entries must be NAME=value: "=x""#),
        (#"{"argv": ["a"], "environment": [], "user": "no such!"}"#, #"user: invalid user name or uid "no such!""#),
        (#"{"argv": ["a"], "environment": [], "user": 5}"#, "user must be a string"),
        (#"{"argv": ["a"], "environment": [], "workingDirectory": "tmp"}"#,
         #"workingDirectory must be an absolute, normalized path: "tmp""#),
        (#"{"argv": ["a"], "environment": [], "cgroup": "/sys/fs/cgroup/a/../b"}"#,
         #"cgroup must be an absolute, normalized path: "/sys/fs/cgroup/a/../b""#),
        (#"{"argv": ["a"], "environment": [], "cgroup": "/sys/fs/cgroup//b"}"#,
         #"cgroup must be an absolute, normalized path: "/sys/fs/cgroup//b""#),
    ])
    func invalidRequests(json: String, message: String) throws {
        let parameters = try #require(try JSON.parse(json).objectValue)
        #expect(throws: LaunchFailure(.invalidRequest, message)) { try SpawnRequest(parameters: parameters) }
    }

    @Test func searchPathComesFromTheRequestEnvironment() {
        #expect(request.searchPath == "/usr/bin:/bin")
        #expect(SpawnRequest(argv: ["a"], user: nil, workingDirectory: nil, environment: [], cgroup: nil).searchPath
                == AppEnvironment.defaultPath)
    }

    @Test("cgroup paths must lie strictly below the cgroup2 mount", arguments: [
        ("/sys/fs/cgroup/unified/bgtaskd.service/apps/a", "/sys/fs/cgroup/unified", nil),
        ("/sys/fs/cgroup/x", "/sys/fs/cgroup", nil),
        ("/sys/fs/cgroup/unified", "/sys/fs/cgroup/unified", "not inside the cgroup2 file system"),
        ("/sys/fs/cgroup/unifiedevil/a", "/sys/fs/cgroup/unified", "not inside the cgroup2 file system"),
        ("/etc/passwd", "/sys/fs/cgroup", "not inside the cgroup2 file system"),
        ("/sys/fs/cgroup/../../etc", "/sys/fs/cgroup", "not an absolute, normalized path"),
        ("/sys/fs/cgroup/a/./b", "/sys/fs/cgroup", "not an absolute, normalized path"),
        ("/sys/fs/cgroup/a/", "/sys/fs/cgroup", "not an absolute, normalized path"),
        ("sys/fs/cgroup/a", "/sys/fs/cgroup", "not an absolute, normalized path"),
    ] as [(String, String, String?)])
    func cgroupPaths(path: String, mount: String, problem: String?) {
        let found = CgroupPath.problem(path, mount: mount)
        if let problem {
            #expect(found?.contains(problem) == true, "\(found ?? "nil")")
        } else {
            #expect(found == nil)
        }
    }

    @Test func cgroup2MountIsFoundInProcMounts() {
        let mounts = """
            sysfs /sys sysfs rw 0 0
            cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0
            cgroup2 /sys/fs/cgroup/un\\040ified cgroup2 rw,nsdelegate 0 0
            cgroup2 /other cgroup2 rw 0 0
            """
        #expect(CgroupPath.v2Mount(in: mounts) == "/sys/fs/cgroup/un ified")
        #expect(CgroupPath.v2Mount(in: "proc /proc proc rw 0 0\n") == nil)
    }

    @Test func repliesCarryThePidOrANamedError() throws {
        #expect(SpawnReply.decode(try VarlinkReply.decode(SpawnReply.reply(pid: 4242).encoded().dropLast())) == .success(4242))
        let failure = LaunchFailure(.executableNotFound, "nope: executable not found")
        let wire = VarlinkReply.failure(failure.varlinkError).encoded()
        let decoded = try VarlinkReply.decode(wire.dropLast())
        #expect(decoded.error == "io.bgtaskd.Launcher.ExecutableNotFound")
        #expect(SpawnReply.decode(decoded) == .failure(failure))
        #expect(SpawnReply.decode(VarlinkReply(parameters: ["pid": 0])) == .failure(LaunchFailure(.spawnFailed, "launcher reply without a valid pid")))
        let foreign = SpawnReply.decode(VarlinkReply.failure(.methodNotFound("x.Y")))
        #expect(foreign == .failure(LaunchFailure(.spawnFailed, #"launcher replied org.varlink.service.MethodNotFound {"method":"x.Y"}"#)))
    }

    @Test func everyErrorKindHasItsName() {
        for kind in LaunchFailure.Kind.allCases {
            let failure = LaunchFailure(kind, "m")
            #expect(failure.errorName == "io.bgtaskd.Launcher.\(kind.rawValue)")
            #expect(LaunchFailure(errorName: failure.errorName, parameters: ["message": "m"]) == failure)
        }
    }
}

/// The app's environment and plan, built the same way in-process and for the launcher.
@Suite("launch plan")
struct LaunchPlanTests {
    @Test func environmentOrderAndPrecedence() {
        let env = AppEnvironment.build(
            inherited: ["PATH": "/x", "HOME": "/root", "USER": "root", "SECRET": "no"],
            user: ResolvedUser(uid: 1000, gid: 1000, name: "alice", home: "/home/alice"),
            manifestEnvironment: [EnvironmentVariable(name: "LANG", value: "C.UTF-8"), EnvironmentVariable(name: "PATH", value: "/app")],
            appID: "org.test.A", socketPath: "/run/bgtaskd/io.bgtaskd")
        #expect(env == [
            "BGTASKD_APP_ID=org.test.A", "BGTASKD_SOCKET=/run/bgtaskd/io.bgtaskd", "HOME=/home/alice", "LANG=C.UTF-8",
            "LOGNAME=alice", "PATH=/app", "USER=alice",
        ])
        let bare = AppEnvironment.build(inherited: [:], user: nil, manifestEnvironment: [], appID: "a", socketPath: "/s")
        #expect(bare == ["BGTASKD_APP_ID=a", "BGTASKD_SOCKET=/s", "PATH=" + AppEnvironment.defaultPath])
    }

    @Test func planResolvesTheUserAndTheHomeDirectory() throws {
        var manifest = AppManifestFile(id: "org.test.A", name: "A", exec: ["app", "x"], path: "/etc/bgtaskd/apps.d/org.test.A.app")
        manifest.user = .id(0)
        manifest.workingDirectory = "~"
        let plan = try LaunchPlan.make(manifest, socketPath: "/s", inherited: [:]).get()
        #expect(plan.user?.uid == 0)
        #expect(plan.user?.name == "root")
        #expect(plan.workingDirectory == plan.user?.home)
        #expect(plan.request(cgroup: "/sys/fs/cgroup/a").validationError() == nil)
        #expect(plan.request(cgroup: nil).user == .id(0))

        manifest.user = .name("no-such-user-bgtaskd")
        #expect(LaunchPlan.make(manifest, socketPath: "/s", inherited: [:])
                == .failure(LaunchFailure(.noSuchUser, "User=no-such-user-bgtaskd: no such user")))
        manifest.user = nil
        manifest.exec = []
        #expect(LaunchPlan.make(manifest, socketPath: "/s", inherited: [:]) == .failure(LaunchFailure(.spawnFailed, "Exec= is empty")))
    }
}
