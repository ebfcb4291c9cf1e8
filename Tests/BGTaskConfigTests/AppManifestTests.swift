import BGTaskConfig
import BGTaskModel
import Foundation
import Testing

@Suite("App manifests")
struct AppManifestTests {
    private func parse(_ text: String, path: String = "/etc/bgtaskd/apps.d/org.example.Test.app")
        -> (manifest: AppManifestFile?, errors: [String], warnings: [String])
    {
        let result = AppManifestFile.parse(text, path: path)
        return (result.manifest, result.errors.map(\.description), result.warnings.map(\.description))
    }

    @Test func minimalManifestHasDefaults() throws {
        let result = parse("[App]\nExec=/usr/bin/test-app\n")
        #expect(result.errors == [])
        let manifest = try #require(result.manifest)
        #expect(manifest == AppManifestFile(
            id: "org.example.Test", exec: ["/usr/bin/test-app"], path: "/etc/bgtaskd/apps.d/org.example.Test.app"))
        #expect(manifest.name == "org.example.Test")
        #expect(manifest.user == nil)
        #expect(manifest.lifecycleAware)
        #expect(!manifest.refreshRestricted)
        #expect(manifest.backgroundAppRefresh == nil)
        #expect(manifest.backgroundModes.isEmpty)
    }

    @Test func everyKey() throws {
        let result = parse(#"""
            [App]
            ID=org.example.Test
            Name=Test App
            Exec=/usr/bin/test-app --flag "two words" 'single quoted' a\ b
            User=1000
            WorkingDirectory=/srv/test
            Environment=A=1 "B=two words"
            Environment=C='x y' A=3
            BackgroundModes=fetch audio
            BackgroundModes=processing
            PermittedTaskIdentifiers=org.example.Test.refresh
            PermittedTaskIdentifiers=org.example.Test.cleanup org.example.Test.refresh
            BackgroundAppRefresh=off
            RefreshRestricted=yes
            LifecycleAware=no
            """#)
        #expect(result.errors == [])
        #expect(result.warnings == [])
        let manifest = try #require(result.manifest)
        #expect(manifest.id == "org.example.Test")
        #expect(manifest.name == "Test App")
        #expect(manifest.exec == ["/usr/bin/test-app", "--flag", "two words", "single quoted", "a b"])
        #expect(manifest.user == .id(1000))
        #expect(manifest.workingDirectory == "/srv/test")
        #expect(manifest.environment.map(\.description) == ["B=two words", "C=x y", "A=3"])
        #expect(manifest.backgroundModes == [.fetch, .audio, .processing])
        #expect(manifest.permittedTaskIdentifiers == ["org.example.Test.refresh", "org.example.Test.cleanup"])
        #expect(manifest.backgroundAppRefresh == false)
        #expect(manifest.refreshRestricted)
        #expect(!manifest.lifecycleAware)
    }

    @Test func emptyAssignmentResetsLists() throws {
        let result = parse("""
            [App]
            Exec=true
            BackgroundModes=audio location
            BackgroundModes=
            BackgroundModes=voip
            PermittedTaskIdentifiers=a b
            PermittedTaskIdentifiers=
            Environment=A=1
            Environment=
            Environment=B=2
            """)
        let manifest = try #require(result.manifest)
        #expect(manifest.exec == ["true"])
        #expect(manifest.backgroundModes == [.voip])
        #expect(manifest.permittedTaskIdentifiers == [])
        #expect(manifest.environment == [EnvironmentVariable(name: "B", value: "2")])
    }

    @Test func execContinuedOverLines() throws {
        let result = parse("""
            [App]
            Exec=/usr/bin/env \\
                 python3 -m http.server \\
            # the port
                 8765
            """)
        #expect(try #require(result.manifest).exec == ["/usr/bin/env", "python3", "-m", "http.server", "8765"])
    }

    @Test("Exec= errors", arguments: [
        (#"Exec=/bin/echo "unterminated"#,
         "/etc/bgtaskd/apps.d/org.example.Test.app:2: Exec: unterminated double quote"),
        (#"Exec=/bin/echo \q"#,
         #"/etc/bgtaskd/apps.d/org.example.Test.app:2: Exec: invalid escape sequence "\q""#),
        ("Exec=bin/app",
         #"/etc/bgtaskd/apps.d/org.example.Test.app:2: Exec: executable must be an absolute path or a bare name to look up in PATH: "bin/app""#),
        ("Exec=-/bin/app",
         #"/etc/bgtaskd/apps.d/org.example.Test.app:2: Exec: executable prefixes (@, -, :, +, !) are not supported: "-/bin/app""#),
        (#"Exec="""#,
         "/etc/bgtaskd/apps.d/org.example.Test.app:2: Exec: no command given"),
        ("Exec=",
         "/etc/bgtaskd/apps.d/org.example.Test.app:1: Exec: required key is missing"),
        ("Name=No command",
         "/etc/bgtaskd/apps.d/org.example.Test.app:1: Exec: required key is missing"),
    ] as [(String, String)])
    func execError(line: String, message: String) {
        let result = parse("[App]\n\(line)\n")
        #expect(result.errors == [message])
        #expect(result.manifest == nil)
    }

    @Test("other key errors", arguments: [
        ("ID=org.example.Other",
         #"/etc/bgtaskd/apps.d/org.example.Test.app:3: ID: ID "org.example.Other" does not match the file name "org.example.Test.app""#),
        ("ID=org/example",
         #"/etc/bgtaskd/apps.d/org.example.Test.app:3: ID: invalid app ID "org/example": expected 1-255 characters of A-Za-z0-9._-, not starting or ending with '.', without '..'"#),
        ("User=not a user",
         #"/etc/bgtaskd/apps.d/org.example.Test.app:3: User: invalid user name or uid "not a user""#),
        ("WorkingDirectory=relative/dir",
         #"/etc/bgtaskd/apps.d/org.example.Test.app:3: WorkingDirectory: working directory must be an absolute, normalized path or ~: "relative/dir""#),
        ("Environment=NOEQUALS",
         #"/etc/bgtaskd/apps.d/org.example.Test.app:3: Environment: invalid environment assignment "NOEQUALS", expected NAME=VALUE"#),
        ("Environment=1X=a",
         #"/etc/bgtaskd/apps.d/org.example.Test.app:3: Environment: invalid environment assignment "1X=a", expected NAME=VALUE"#),
        ("Environment=\"A=unterminated",
         "/etc/bgtaskd/apps.d/org.example.Test.app:3: Environment: unterminated double quote"),
        ("Environment=BGTASKD_SOCKET=/x",
         "/etc/bgtaskd/apps.d/org.example.Test.app:3: Environment: BGTASKD_SOCKET is set by bgtaskd and cannot be assigned"),
        ("BackgroundModes=fetch teleportation",
         #"/etc/bgtaskd/apps.d/org.example.Test.app:3: BackgroundModes: invalid value "teleportation", expected one of: audio, location, voip, external-accessory, bluetooth, fetch, remote-notification, processing"#),
        ("PermittedTaskIdentifiers=ok bad/one",
         #"/etc/bgtaskd/apps.d/org.example.Test.app:3: PermittedTaskIdentifiers: invalid task identifier "bad/one": expected 1-255 characters of A-Za-z0-9._-"#),
        ("BackgroundAppRefresh=unmetered",
         #"/etc/bgtaskd/apps.d/org.example.Test.app:3: BackgroundAppRefresh: invalid boolean "unmetered""#),
        ("RefreshRestricted=2",
         #"/etc/bgtaskd/apps.d/org.example.Test.app:3: RefreshRestricted: invalid boolean "2""#),
        ("LifecycleAware=sure",
         #"/etc/bgtaskd/apps.d/org.example.Test.app:3: LifecycleAware: invalid boolean "sure""#),
    ] as [(String, String)])
    func keyError(line: String, message: String) {
        let result = parse("[App]\nExec=/bin/true\n\(line)\n")
        #expect(result.errors == [message])
        #expect(result.manifest == nil)
    }

    @Test func missingSectionAndBadFileName() {
        #expect(parse("Exec=/bin/true\n").errors == [
            "/etc/bgtaskd/apps.d/org.example.Test.app: required section [App] is missing",
        ])
        #expect(parse("[App]\nExec=/bin/true\n", path: "/x/..app").errors == [
            #"/x/..app: file name "..app" is not a valid app ID followed by .app"#,
        ])
    }

    /// A key of [App] bgtaskd does not know is an error naming file, line and key (a misspelled key would
    /// silently give the app less than it asks for); unknown sections and `X-` keys stay warnings/ignored.
    @Test func unknownKeysAreErrorsUnknownSectionsWarn() throws {
        let result = parse("[App]\nExec=/bin/true\nIcon=mail.png\nX-Vendor=1\n[Desktop Entry]\nName=x\n")
        #expect(result.errors == ["/etc/bgtaskd/apps.d/org.example.Test.app:3: Icon: unknown key"])
        #expect(result.warnings == ["/etc/bgtaskd/apps.d/org.example.Test.app:5: unknown section [Desktop Entry], ignored"])
        #expect(result.manifest == nil)
        #expect(parse("[App]\nExec=/bin/true\nX-Vendor=1\n[Desktop Entry]\nName=x\n").manifest != nil)
    }

    @Test("app IDs", arguments: [
        ("org.example.Mail", true), ("a", true), ("A-b_c.9", true), (String(repeating: "a", count: 255), true),
        ("", false), (String(repeating: "a", count: 256), false), (".", false), ("..", false), (".hidden", false),
        ("trailing.", false), ("a..b", false), ("a/b", false), ("a b", false), ("é", false),
    ])
    func appID(id: String, valid: Bool) {
        #expect(AppManifestFile.isValidID(id) == valid)
    }

    @Test func badManifestDoesNotStopTheOthers() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("apps.d/org.example.Good.app", "[App]\nExec=/bin/sleep infinity\nBackgroundModes=fetch\n")
        let bad = try directory.write("apps.d/org.example.Bad.app", "[App]\nExec=/bin/true\n\nLifecycleAware=perhaps\n")
        let noExec = try directory.write("apps.d/org.example.NoExec.app", "# nothing to run\n[App]\nName=Nothing\n")
        let warn = try directory.write("apps.d/org.example.Warn.app", "[App]\nExec=/bin/true\nColour=blue\n")
        try directory.write("apps.d/README", "not a manifest\n")
        try directory.write("apps.d/org.example.Backup.app~", "[App]\n")
        let result = AppManifestFile.loadAll(appsDirectory: AppManifestFile.appsDirectory(inConfigDirectory: directory.path))
        #expect(result.manifests.map(\.id) == ["org.example.Good"])
        #expect(result.manifests.first?.exec == ["/bin/sleep", "infinity"])
        #expect(result.errors.map(\.description) == [
            #"\#(bad):4: LifecycleAware: invalid boolean "perhaps""#,
            "\(noExec):2: Exec: required key is missing",
            "\(warn):3: Colour: unknown key",
        ])
        #expect(result.warnings.isEmpty)
    }

    @Test func missingAppsDirectoryIsEmpty() throws {
        let result = AppManifestFile.loadAll(appsDirectory: "/nonexistent/bgtaskd/apps.d")
        #expect(result.manifests.isEmpty)
        #expect(result.errors.isEmpty)
    }

    @Test func repositoryExamples() throws {
        let result = AppManifestFile.loadAll(appsDirectory: repositoryRoot() + "/config/apps.d")
        #expect(result.errors.map(\.description) == [])
        #expect(result.warnings.map(\.description) == [])
        #expect(result.manifests.map(\.id) == ["org.example.Mail", "org.example.WebServer"])
        let mail = try #require(result.manifests.first)
        #expect(mail.lifecycleAware)
        #expect(mail.backgroundModes == [.fetch])
        #expect(mail.permittedTaskIdentifiers == ["org.example.Mail.refresh"])
        let web = try #require(result.manifests.last)
        #expect(!web.lifecycleAware)
        #expect(web.exec == ["/usr/bin/env", "python3", "-m", "http.server", "8765", "--bind", "127.0.0.1"])
    }

    @Test func modeTable() {
        for mode in BackgroundMode.allCases {
            #expect(BackgroundMode(rawValue: mode.rawValue) == mode)
        }
        #expect(BackgroundMode.allCases.filter(\.isContinuous).map(\.rawValue)
            == ["audio", "location", "voip", "external-accessory", "bluetooth"])
        #expect(AppManifestFile.keys == [
            "ID", "Name", "Exec", "User", "WorkingDirectory", "Environment", "BackgroundModes",
            "PermittedTaskIdentifiers", "BackgroundAppRefresh", "RefreshRestricted", "LifecycleAware",
        ])
    }

    /// The keys most manifests leave unset are kept out of line: read and written like the others, equal
    /// and hashed by value, and a manifest whose keys are all unset again is equal to one never set.
    @Test func rarelySetKeysAreKeptOutOfLineAndCompareByValue() {
        #expect(MemoryLayout<AppManifestFile>.stride <= 80)
        let plain = AppManifestFile(id: "org.example.A", exec: ["/bin/true"])
        var a = plain
        a.workingDirectory = "/srv"
        a.environment = [EnvironmentVariable(name: "K", value: "v")]
        a.permittedTaskIdentifiers = ["org.example.A.refresh"]
        var b = AppManifestFile(
            id: "org.example.A", exec: ["/bin/true"], workingDirectory: "/srv",
            environment: [EnvironmentVariable(name: "K", value: "v")], permittedTaskIdentifiers: ["org.example.A.refresh"])
        #expect(a == b && a.hashValue == b.hashValue && a != plain)
        #expect(a.workingDirectory == "/srv" && a.environment.map(\.name) == ["K"] && a.user == nil)
        let copy = b
        b.environment[0].value = "w"  // a copy keeps its own value
        #expect(copy.environment[0].value == "v" && b.environment[0].value == "w" && copy == a)
        a.workingDirectory = nil
        a.environment = []
        a.permittedTaskIdentifiers = []
        #expect(a == plain && a.hashValue == plain.hashValue)
    }

    /// A manifest's path in its directory is kept as the directory (one string for all of them): it reads,
    /// compares and hashes as before; a path elsewhere, of another name, or a directory given with a
    /// trailing `/` is kept whole; setting the path keeps it whole again.
    @Test func aPathInItsDirectoryIsKeptAsTheSharedDirectory() {
        let whole = AppManifestFile(id: "org.example.A", exec: ["/bin/true"], path: "/etc/bgtaskd/apps.d/org.example.A.app")
        var shared = whole
        shared.sharePath(directory: "/etc/bgtaskd/apps.d")
        #expect(shared.path == whole.path && shared == whole && shared.hashValue == whole.hashValue)
        var again = whole
        again.sharePath(directory: "/etc/bgtaskd/apps.d")
        #expect(again == shared)
        for (path, directory) in [
            ("/etc/bgtaskd/apps.d/org.example.B.app", "/etc/bgtaskd/apps.d"),  // another app's name
            ("/etc/bgtaskd/apps.d/org.example.A.app", "/etc/bgtaskd/apps.d/"),  // trailing slash: whole
            ("/etc/bgtaskd/apps.dx/org.example.A.app", "/etc/bgtaskd/apps.d"),
            ("/etc/bgtaskd/apps.d/org.example.A.apq", "/etc/bgtaskd/apps.d"),
            ("/srv/org.example.A.app", "/etc/bgtaskd/apps.d"),
        ] {
            var m = AppManifestFile(id: "org.example.A", exec: ["/bin/true"], path: path)
            m.sharePath(directory: directory)
            #expect(m.path == path)
            var other = m
            other.path = "/elsewhere/org.example.A.app"
            #expect(other != m)
        }
        var renamed = shared
        renamed.id = "org.example.B"  // the file stays the one it was read from
        #expect(renamed.path == whole.path)
        var moved = shared
        moved.path = "/srv/org.example.A.app"
        #expect(moved.path == "/srv/org.example.A.app" && moved != shared)
        moved.path = whole.path
        #expect(moved == shared && moved == whole)
    }
}
