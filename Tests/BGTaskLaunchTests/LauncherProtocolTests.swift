import BGTaskConfig
import Foundation
import BGTaskLaunch
import BGTaskProtocol
import Testing

/// io.bgtaskd.Launcher messages: encoding, decoding and validation (what the launcher accepts from the daemon).
@Suite("io.bgtaskd.Launcher")
struct LauncherProtocolTests {
    private let request = SpawnRequest(
        appID: "org.test.A", cgroup: "/sys/fs/cgroup/bgtaskd.service/apps/org.test.A", socketPath: "/run/bgtaskd/io.bgtaskd",
        environment: ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "WAYLAND_DISPLAY": "wayland-0"])

    @Test func requestRoundTripsThroughTheWire() throws {
        let bytes = request.call.encoded()
        #expect(bytes.last == 0)
        let call = try VarlinkCall.decode(bytes.dropLast())
        #expect(call.method == "io.bgtaskd.Launcher.Spawn")
        // The app, its cgroup, the socket and the session variables: no command, user or directory.
        #expect(Set(call.parameters.keys) == ["appId", "cgroup", "socket", "environment"])
        #expect(call.parameters["appId"] == "org.test.A")
        #expect(call.parameters["environment"]?.objectValue?["LANG"] == "C.UTF-8")
        #expect(try SpawnRequest(parameters: call.parameters) == request)
    }

    @Test func goldenRequest() throws {
        let call = try VarlinkCall.decode(Array(#"""
            {"method":"io.bgtaskd.Launcher.Spawn","parameters":{"appId":"org.test.A","socket":"/run/s","environment":{"TZ":"UTC"}}}
            """#.utf8)[...])
        #expect(try SpawnRequest(parameters: call.parameters)
                == SpawnRequest(appID: "org.test.A", cgroup: nil, socketPath: "/run/s", environment: ["TZ": "UTC"]))
    }

    @Test func cgroupMayBeAbsentOrNull() throws {
        let minimal = SpawnRequest(appID: "a", cgroup: nil, socketPath: "/s", environment: [:])
        #expect(minimal.parameters["cgroup"] == nil)
        #expect(try SpawnRequest(parameters: minimal.parameters) == minimal)
        var withNull = minimal.parameters
        withNull["cgroup"] = .null
        #expect(try SpawnRequest(parameters: withNull) == minimal)
    }

    @Test func everyVariableTheInProcessSpawnPassesOnIsAllowed() throws {
        let all = Dictionary(uniqueKeysWithValues: AppEnvironment.inheritedNames.map { ($0, "v") })
        let full = SpawnRequest(appID: "a", cgroup: nil, socketPath: "/s", environment: all)
        #expect(try SpawnRequest(parameters: full.parameters) == full)
        #expect(SpawnRequest.allowedEnvironment == AppEnvironment.inheritedNames)
        #expect(Set(SpawnRequest.allowedEnvironment).isSuperset(of: ["PATH", "LANG", "TZ", "XDG_RUNTIME_DIR", "WAYLAND_DISPLAY", "DISPLAY"]))
    }

    @Test("environment keys outside the allowlist are refused", arguments: [
        "LD_PRELOAD", "LD_LIBRARY_PATH", "BGTASKD_APP_ID", "BGTASKD_SOCKET", "PYTHONPATH", "IFS", "path", "",
    ])
    func environmentOutsideTheAllowlist(name: String) throws {
        var parameters = request.parameters
        var env = try #require(parameters["environment"]?.objectValue)
        env[name] = "/tmp/evil"
        parameters["environment"] = .object(env)
        #expect(throws: LaunchFailure(.invalidRequest,
                                      "environment: \(name) may not be passed on (allowed: \(AppEnvironment.inheritedNames.joined(separator: " ")))"))
        {
            try SpawnRequest(parameters: parameters)
        }
    }

    @Test("invalid requests are refused with InvalidRequest", arguments: [
        (#"{"socket": "/s", "environment": {}}"#, "appId must be a string"),
        (#"{"appId": 5, "socket": "/s", "environment": {}}"#, "appId must be a string"),
        (#"{"appId": "", "socket": "/s", "environment": {}}"#, #"appId: invalid app ID """#),
        (#"{"appId": "../../etc/passwd", "socket": "/s", "environment": {}}"#, #"appId: invalid app ID "../../etc/passwd""#),
        (#"{"appId": "a/b", "socket": "/s", "environment": {}}"#, #"appId: invalid app ID "a/b""#),
        (#"{"appId": "..", "socket": "/s", "environment": {}}"#, #"appId: invalid app ID "..""#),
        (#"{"appId": "a", "environment": {}}"#, "socket must be a string"),
        (#"{"appId": "a", "socket": "s", "environment": {}}"#, #"socket must be an absolute, normalized path: "s""#),
        (#"{"appId": "a", "socket": "/s"}"#, "environment must be an object of strings"),
        (#"{"appId": "a", "socket": "/s", "environment": ["PATH=/x"]}"#, "environment must be an object of strings"),
        (#"{"appId": "a", "socket": "/s", "environment": {"PATH": 1}}"#, "environment must be an object of strings"),
        (#"{"appId": "a", "socket": "/s", "environment": {"PATH": "a\u0000b"}}"#, "environment: PATH must not contain NUL"),
        (#"{"appId": "a", "socket": "/s", "environment": {}, "cgroup": 5}"#, "cgroup must be a string"),
        (#"{"appId": "a", "socket": "/s", "environment": {}, "cgroup": "/sys/fs/cgroup/a/../b"}"#,
         #"cgroup must be an absolute, normalized path: "/sys/fs/cgroup/a/../b""#),
        // The old request's command fields: refused, not ignored.
        (#"{"appId": "a", "socket": "/s", "environment": {}, "argv": ["/bin/sh"]}"#, "unknown parameter argv"),
        (#"{"appId": "a", "socket": "/s", "environment": {}, "user": "root"}"#, "unknown parameter user"),
    ])
    func invalidRequests(json: String, message: String) throws {
        let parameters = try #require(try JSON.parse(json).objectValue)
        #expect(throws: LaunchFailure(.invalidRequest, message)) { try SpawnRequest(parameters: parameters) }
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

    @Test func theSpawnReplyIsTheInterfacesReply() throws {
        let signature = try VarlinkInterfaceSignature(parsing: LauncherInterface.description)
        #expect(signature.outputs["Spawn"]?.map(\.name) == SpawnReply.fields)
        #expect(SpawnReply.decode(VarlinkReply(parameters: ["pid": "4242"])) == .failure(LaunchFailure(.spawnFailed, "launcher reply without a valid pid")))
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
        #expect(plan.account == .id(0))

        manifest.user = .name("no-such-user-bgtaskd")
        #expect(LaunchPlan.make(manifest, socketPath: "/s", inherited: [:])
                == .failure(LaunchFailure(.noSuchUser, "User=no-such-user-bgtaskd: no such user")))
        manifest.user = nil
        manifest.exec = []
        #expect(LaunchPlan.make(manifest, socketPath: "/s", inherited: [:]) == .failure(LaunchFailure(.spawnFailed, "Exec= is empty")))
    }
}

/// What bgtaskd-launcher starts for a request: the manifest it reads itself, on every request.
@Suite("launcher manifests")
struct LauncherManifestTests {
    /// A fresh config directory with `apps.d/`, removed when done.
    private func withConfigDirectory(_ body: (String) throws -> Void) throws {
        let dir = FileManager.default.temporaryDirectory.path + "/bgtasklaunch-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir + "/apps.d", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try body(dir)
    }

    private func write(_ dir: String, _ id: String, _ lines: [String]) throws {
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: "\(dir)/apps.d/\(id).app"))
    }

    private func request(_ id: String, env: [String: String] = [:]) -> SpawnRequest {
        SpawnRequest(appID: id, cgroup: nil, socketPath: "/run/bgtaskd/io.bgtaskd", environment: env)
    }

    @Test("the manifest path is built from a valid app ID only", arguments: [
        ("org.test.A", "/etc/bgtaskd/apps.d/org.test.A.app"),
        ("a_b-c.1", "/etc/bgtaskd/apps.d/a_b-c.1.app"),
        ("../passwd", nil), ("a/../../b", nil), ("..", nil), (".", nil), ("", nil), ("a/b", nil), (".hidden", nil),
        ("a..b", nil), ("a\u{0}b", nil), ("a b", nil), (String(repeating: "a", count: 256), nil),
    ] as [(String, String?)])
    func manifestPath(id: String, path: String?) {
        #expect(AppManifestFile.path(forID: id, inConfigDirectory: "/etc/bgtaskd") == path)
    }

    @Test func planComesFromTheManifestWithTheRequestsSessionVariables() throws {
        try withConfigDirectory { dir in
            try write(dir, "org.test.A", ["[App]", "ID=org.test.A", "Exec=/bin/echo one \"two words\"", "User=0",
                                          "WorkingDirectory=/tmp", "Environment=EXTRA=yes LANG=de_DE.UTF-8"])
            let made = try LaunchPlan.make(for: request("org.test.A", env: ["LANG": "C", "TZ": "UTC", "HOME": "/nonexistent"]),
                                           configDirectory: dir, requesterUID: 0).get()
            #expect(made.manifest.path == dir + "/apps.d/org.test.A.app")
            #expect(made.plan.argv == ["/bin/echo", "one", "two words"])
            #expect(made.plan.account == .id(0))
            #expect(made.plan.workingDirectory == "/tmp")
            // The same builder as the in-process spawn, fed with the request's variables.
            let manifest = made.manifest
            let inProcess = try LaunchPlan.make(manifest, socketPath: "/run/bgtaskd/io.bgtaskd",
                                                inherited: ["LANG": "C", "TZ": "UTC", "HOME": "/nonexistent"]).get()
            #expect(made.plan == inProcess)
            #expect(made.plan.environment.contains("EXTRA=yes"))
            #expect(made.plan.environment.contains("LANG=de_DE.UTF-8"), "the manifest wins over the session")
            #expect(made.plan.environment.contains("TZ=UTC"))
            #expect(made.plan.environment.contains("BGTASKD_APP_ID=org.test.A"))
            #expect(made.plan.environment.contains("BGTASKD_SOCKET=/run/bgtaskd/io.bgtaskd"))
        }
    }

    @Test func anAppWithoutUserRunsAsTheRequesterNeverAsTheLauncher() throws {
        try withConfigDirectory { dir in
            try write(dir, "org.test.A", ["[App]", "Exec=/bin/true"])
            let nobody = try #require(ResolvedUser.resolve(.name("nobody")))
            let plan = try LaunchPlan.make(for: request("org.test.A"), configDirectory: dir, requesterUID: nobody.uid).get().plan
            #expect(plan.user?.uid == nobody.uid)
            #expect(plan.user?.gid == nobody.gid)
            #expect(plan.environment.contains("USER=nobody"))
            // User= still decides when it is there.
            try write(dir, "org.test.A", ["[App]", "Exec=/bin/true", "User=0"])
            #expect(try LaunchPlan.make(for: request("org.test.A"), configDirectory: dir, requesterUID: nobody.uid).get().plan.user?.uid == 0)
        }
    }

    @Test func aChangedManifestIsReadAgain() throws {
        try withConfigDirectory { dir in
            try write(dir, "org.test.A", ["[App]", "Exec=/bin/first"])
            #expect(try LaunchPlan.make(for: request("org.test.A"), configDirectory: dir, requesterUID: 0).get().plan.argv == ["/bin/first"])
            try write(dir, "org.test.A", ["[App]", "Exec=/bin/second"])
            #expect(try LaunchPlan.make(for: request("org.test.A"), configDirectory: dir, requesterUID: 0).get().plan.argv == ["/bin/second"])
        }
    }

    @Test func missingAndBadManifestsHaveNamedErrors() throws {
        try withConfigDirectory { dir in
            // No manifest and (in the data directories of the default configuration) no desktop entry.
            let none = LaunchPlan.make(for: request("org.test.None"), configDirectory: dir, requesterUID: 0).map(\.plan)
            #expect(throws: LaunchFailure.self) { try none.get() }
            if case .failure(let failure) = none {
                #expect(failure.kind == .noSuchApp)
                #expect(failure.message.hasPrefix("org.test.None: no app manifest \(dir)/apps.d/org.test.None.app"))
            }
            try write(dir, "org.test.Bad", ["[App]", "Exec=/bin/true", "User=no such"])
            #expect(LaunchPlan.make(for: request("org.test.Bad"), configDirectory: dir, requesterUID: 0).map(\.plan)
                    == .failure(LaunchFailure(.invalidManifest, "\(dir)/apps.d/org.test.Bad.app:3: User: invalid user name or uid \"no such\"")))
            // A manifest whose ID= names another app is not that app's.
            try write(dir, "org.test.Other", ["[App]", "ID=org.test.A", "Exec=/bin/true"])
            let other = LaunchPlan.make(for: request("org.test.Other"), configDirectory: dir, requesterUID: 0).map(\.plan)
            #expect(throws: LaunchFailure.self) { try other.get() }
            try write(dir, "org.test.NoUser", ["[App]", "Exec=/bin/true", "User=no-such-user-bgtaskd"])
            #expect(LaunchPlan.make(for: request("org.test.NoUser"), configDirectory: dir, requesterUID: 0).map(\.plan)
                    == .failure(LaunchFailure(.noSuchUser, "User=no-such-user-bgtaskd: no such user")))
            // An ID that is no file name never reaches the file system (a request would not decode either).
            #expect(LaunchPlan.make(for: request("../apps.d/org.test.Bad"), configDirectory: dir, requesterUID: 0).map(\.plan)
                    == .failure(LaunchFailure(.invalidRequest, #"appId: invalid app ID "../apps.d/org.test.Bad""#)))
        }
    }

    /// SPEC §13: an app with only a desktop entry, as the configuration in the launcher's directory allows.
    @Test func aDesktopEntryIsStartedOnlyAsTheAdministratorsConfigurationAllows() throws {
        try withConfigDirectory { dir in
            let data = dir + "/share"
            try FileManager.default.createDirectory(atPath: data + "/applications", withIntermediateDirectories: true)
            let entry = data + "/applications/org.test.D.desktop"
            try Data("[Desktop Entry]\nType=Application\nName=D\nExec=/bin/true %U --x\n".utf8).write(to: URL(fileURLWithPath: entry))
            chmod(entry, 0o644)
            try FileManager.default.createDirectory(atPath: dir + "/bgtaskd.conf.d", withIntermediateDirectories: true)
            let conf = URL(fileURLWithPath: dir + "/bgtaskd.conf.d/50-test.conf")
            try Data("[Apps]\nDataDirs=\(data)\n".utf8).write(to: conf)
            let made = try LaunchPlan.make(for: request("org.test.D"), configDirectory: dir, requesterUID: 65534).get()
            #expect(made.plan.argv == ["/bin/true", "--x"])
            #expect(made.plan.user?.uid == 65534)
            #expect(made.manifest.path == entry)
            func failure() -> LaunchFailure? {
                if case .failure(let f) = LaunchPlan.make(for: request("org.test.D"), configDirectory: dir, requesterUID: 65534) { return f }
                return nil
            }
            // Writable by others, or not root's: refused by name (the tests run as root, who owns the file).
            chmod(entry, 0o664)
            #expect(failure()?.kind == .permissionDenied)
            chmod(entry, 0o644)
            if getuid() == 0 {
                chown(entry, 65534, 65534)
                #expect(failure()?.kind == .permissionDenied)
                chown(entry, 0, 0)
            }
            // Desktop entries off in the administrator's configuration.
            try Data("[Apps]\nDataDirs=\(data)\nDesktopEntries=no\n".utf8).write(to: conf)
            #expect(failure()?.kind == .noSuchApp)
            #expect(failure()?.message.contains("DesktopEntries=no") == true)
            // A manifest in apps.d wins over the entry.
            try Data("[Apps]\nDataDirs=\(data)\n".utf8).write(to: conf)
            try write(dir, "org.test.D", ["[App]", "Exec=/bin/false"])
            #expect(try LaunchPlan.make(for: request("org.test.D"), configDirectory: dir, requesterUID: 0).get().plan.argv == ["/bin/false"])
        }
    }

    @Test func executablesAreLookedUpInTheManifestsOrTheLaunchersPathNotTheDaemons() {
        #expect(AppEnvironment.executableSearchPath(manifestEnvironment: [], ownPath: "/usr/bin") == "/usr/bin")
        #expect(AppEnvironment.executableSearchPath(manifestEnvironment: [], ownPath: nil) == AppEnvironment.defaultPath)
        #expect(AppEnvironment.executableSearchPath(
            manifestEnvironment: [EnvironmentVariable(name: "PATH", value: "/opt/app/bin")], ownPath: "/usr/bin") == "/opt/app/bin")
    }
}
