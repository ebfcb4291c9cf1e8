import BGTaskConfig
import Foundation
import Testing

@Suite("bgtaskd.conf")
struct DaemonConfigTests {
    private static let second: Int64 = 1_000_000

    private func parse(_ text: String, path: String = "/etc/bgtaskd/bgtaskd.conf")
        -> (config: DaemonConfig?, errors: [String], warnings: [String])
    {
        let result = DaemonConfig.parse([ConfigSource(path: path, text: text)])
        return (result.config, result.errors.map(\.description), result.warnings.map(\.description))
    }

    @Test func defaults() {
        let config = DaemonConfig()
        #expect(config.socket == "/run/bgtaskd/io.bgtaskd")
        #expect(config.controlGroup == nil)
        #expect(config.freezerBackend == .auto)
        #expect(config.cgroupRoot == nil)
        #expect(config.launcherSocket == nil)
        #expect(config.maxMessageSize == 65_536)
        #expect(config.didEnterBackgroundTimeoutUSec == 5 * Self.second)
        #expect(config.backgroundTimeBudgetUSec == 30 * Self.second)
        #expect(config.expirationWarningUSec == 5 * Self.second)
        #expect(config.maxBackgroundTasksPerApp == 64)
        #expect(config.launchTimeoutUSec == 20 * Self.second)
        #expect(config.willTerminateTimeoutUSec == 5 * Self.second)
        #expect(config.killTimeoutUSec == 5 * Self.second)
        #expect(config.refreshTaskBudgetUSec == 30 * Self.second)
        #expect(config.processingTaskBudgetUSec == 300 * Self.second)
        #expect(config.backgroundAppRefresh == .on)
        #expect(config.defaultAppRefresh == true)
        #expect(config.minimumRefreshIntervalUSec == 900 * Self.second)
        #expect(config.processingIdleUSec == 60 * Self.second)
        #expect(config.pressureKill == false)
        #expect(config.pressureThreshold == Percentage(10))
        #expect(config.pressureWindowUSec == Self.second)
        #expect(config.journalAssertionBurst == 100)
        #expect(config.journalAssertionGlobalBurst == 1000)
        #expect(config.journalAssertionIntervalUSec == 30 * Self.second)
    }

    @Test func journalBudgetKeysAreChecked() {
        let bad = parse("[Journal]\nJournalAssertionBurst=-1\nJournalAssertionGlobalBurst=many\nJournalAssertionIntervalSec=0\n")
        #expect(bad.config == nil)
        #expect(bad.errors.count == 3)
        for (error, key) in zip(bad.errors, ["JournalAssertionBurst", "JournalAssertionGlobalBurst", "JournalAssertionIntervalSec"]) {
            #expect(error.contains(key), "\(error)")
        }
    }

    @Test func everyKeyParses() throws {
        let result = parse("""
            [Daemon]
            Socket=/tmp/b/sock
            ControlGroup=bgtaskd
            FreezerBackend=signal
            CgroupRoot=/sys/fs/cgroup/bgtaskd.slice
            LauncherSocket=/run/bgtaskd-launcher/io.bgtaskd.Launcher
            MaxMessageSize=1M
            [Lifecycle]
            DidEnterBackgroundTimeoutSec=300ms
            BackgroundTimeBudgetSec=1min 30s
            ExpirationWarningSec=2
            MaxBackgroundTasksPerApp=8
            LaunchTimeoutSec=1.5s
            WillTerminateTimeoutSec=1s
            KillTimeoutSec=2s
            RefreshTaskBudgetSec=10s
            ProcessingTaskBudgetSec=1h
            LockRecheckSec=250ms
            LockDeferralSec=3s
            FreezeTimeoutSec=500ms
            FreezeRetrySec=1min
            [Refresh]
            BackgroundAppRefresh=unmetered
            DefaultAppRefresh=off
            MinimumRefreshIntervalSec=0
            ProcessingIdleSec=5min
            [Memory]
            PressureKill=yes
            PressureThreshold=12.5%
            PressureWindowSec=2s
            [Journal]
            JournalAssertionBurst=10
            JournalAssertionGlobalBurst=50
            JournalAssertionIntervalSec=1s
            """)
        #expect(result.errors == [])
        #expect(result.warnings == [])
        let config = try #require(result.config)
        #expect(config.socket == "/tmp/b/sock")
        #expect(config.controlGroup == .name("bgtaskd"))
        #expect(config.freezerBackend == .signal)
        #expect(config.cgroupRoot == "/sys/fs/cgroup/bgtaskd.slice")
        #expect(config.launcherSocket == "/run/bgtaskd-launcher/io.bgtaskd.Launcher")
        #expect(config.maxMessageSize == 1_048_576)
        #expect(config.didEnterBackgroundTimeoutUSec == 300_000)
        #expect(config.backgroundTimeBudgetUSec == 90 * Self.second)
        #expect(config.expirationWarningUSec == 2 * Self.second)
        #expect(config.maxBackgroundTasksPerApp == 8)
        #expect(config.launchTimeoutUSec == 1_500_000)
        #expect(config.lockRecheckUSec == 250_000)
        #expect(config.lockDeferralUSec == 3 * Self.second)
        #expect(config.freezeTimeoutUSec == 500_000)
        #expect(config.freezeRetryUSec == 60 * Self.second)
        #expect(config.willTerminateTimeoutUSec == Self.second)
        #expect(config.killTimeoutUSec == 2 * Self.second)
        #expect(config.refreshTaskBudgetUSec == 10 * Self.second)
        #expect(config.processingTaskBudgetUSec == 3_600 * Self.second)
        #expect(config.backgroundAppRefresh == .unmetered)
        #expect(config.defaultAppRefresh == false)
        #expect(config.minimumRefreshIntervalUSec == 0)
        #expect(config.processingIdleUSec == 300 * Self.second)
        #expect(config.pressureKill == true)
        #expect(config.pressureThreshold == Percentage(basisPoints: 1_250))
        #expect(config.pressureWindowUSec == 2 * Self.second)
        #expect(config.journalAssertionBurst == 10)
        #expect(config.journalAssertionGlobalBurst == 50)
        #expect(config.journalAssertionIntervalUSec == Self.second)
        #expect(Set(config.settings.map(\.key)) == Set(DaemonConfig.keys.map(\.key)))
    }

    @Test func laterAssignmentWinsAndEmptyRestoresDefault() throws {
        let result = parse("""
            [Lifecycle]
            KillTimeoutSec=1s
            KillTimeoutSec=2s
            LaunchTimeoutSec=1s
            LaunchTimeoutSec=
            [Daemon]
            ControlGroup=wheel
            ControlGroup=
            [Refresh]
            BackgroundAppRefresh=no
            """)
        let config = try #require(result.config)
        #expect(config.killTimeoutUSec == 2 * Self.second)
        #expect(config.launchTimeoutUSec == DaemonConfig().launchTimeoutUSec)
        #expect(config.controlGroup == nil)
        #expect(config.backgroundAppRefresh == .off)
    }

    @Test func launcherSocketEmptyMeansInProcessSpawn() throws {
        let result = parse("""
            [Daemon]
            LauncherSocket=/run/bgtaskd-launcher/io.bgtaskd.Launcher
            LauncherSocket=
            """)
        let config = try #require(result.config)
        #expect(config.launcherSocket == nil)
        #expect(config.settings.first { $0.key == "LauncherSocket" }?.value == "")
    }

    @Test func settingsRoundTrip() throws {
        var text = ""
        var section = ""
        for setting in DaemonConfig().settings {
            if setting.section != section {
                section = setting.section
                text += "[\(section)]\n"
            }
            text += "\(setting.key)=\(setting.value)\n"
        }
        let result = parse(text)
        #expect(result.errors == [])
        #expect(result.config == DaemonConfig())
    }

    @Test("error messages name file, line and key", arguments: [
        ("[Lifecycle]\n\nDidEnterBackgroundTimeoutSec=5 parsecs",
         #"/etc/bgtaskd/bgtaskd.conf:3: DidEnterBackgroundTimeoutSec: invalid time span "5 parsecs""#),
        ("[Lifecycle]\nBackgroundTimeBudgetSec=infinity",
         #"/etc/bgtaskd/bgtaskd.conf:2: BackgroundTimeBudgetSec: time span must be finite, "infinity" is not allowed here"#),
        ("[Lifecycle]\nKillTimeoutSec=0",
         "/etc/bgtaskd/bgtaskd.conf:2: KillTimeoutSec: time span must be greater than 0"),
        ("[Lifecycle]\n\nLockDeferralSec=soon",
         #"/etc/bgtaskd/bgtaskd.conf:3: LockDeferralSec: invalid time span "soon""#),
        ("[Lifecycle]\nLockRecheckSec=500us",
         "/etc/bgtaskd/bgtaskd.conf:2: LockRecheckSec: time span must be at least 1ms"),
        ("[Lifecycle]\nFreezeTimeoutSec=0",
         "/etc/bgtaskd/bgtaskd.conf:2: FreezeTimeoutSec: time span must be at least 1ms"),
        ("[Lifecycle]\nFreezeRetrySec=2y",
         "/etc/bgtaskd/bgtaskd.conf:2: FreezeRetrySec: time span must be at most 1y"),
        ("[Lifecycle]\nLaunchTimeoutSec=2y",
         "/etc/bgtaskd/bgtaskd.conf:2: LaunchTimeoutSec: time span must be at most 1y"),
        ("[Lifecycle]\nMaxBackgroundTasksPerApp=0",
         "/etc/bgtaskd/bgtaskd.conf:2: MaxBackgroundTasksPerApp: must be between 1 and 1000000"),
        ("[Lifecycle]\nMaxBackgroundTasksPerApp=many",
         #"/etc/bgtaskd/bgtaskd.conf:2: MaxBackgroundTasksPerApp: invalid integer "many""#),
        ("[Lifecycle]\nMaxBackgroundTasksPerApp=-1",
         #"/etc/bgtaskd/bgtaskd.conf:2: MaxBackgroundTasksPerApp: invalid integer "-1""#),
        ("[Daemon]\nFreezerBackend=ice",
         #"/etc/bgtaskd/bgtaskd.conf:2: FreezerBackend: invalid value "ice", expected one of: auto, cgroup, signal, none"#),
        ("[Daemon]\nSocket=run/x",
         #"/etc/bgtaskd/bgtaskd.conf:2: Socket: socket path must be absolute and normalized: "run/x""#),
        ("[Daemon]\nSocket=/" + String(repeating: "s", count: 120),
         "/etc/bgtaskd/bgtaskd.conf:2: Socket: socket path is longer than 107 bytes"),
        ("[Daemon]\nControlGroup=no such group",
         #"/etc/bgtaskd/bgtaskd.conf:2: ControlGroup: invalid group name or gid "no such group""#),
        ("[Daemon]\nCgroupRoot=/sys/fs/cgroup/../x",
         #"/etc/bgtaskd/bgtaskd.conf:2: CgroupRoot: must be a normalized path, absolute or relative to the cgroup2 mount: "/sys/fs/cgroup/../x""#),
        ("[Daemon]\nCgroupRoot=../x",
         #"/etc/bgtaskd/bgtaskd.conf:2: CgroupRoot: must be a normalized path, absolute or relative to the cgroup2 mount: "../x""#),
        ("[Daemon]\nLauncherSocket=run/launcher",
         #"/etc/bgtaskd/bgtaskd.conf:2: LauncherSocket: launcher socket path must be absolute and normalized: "run/launcher""#),
        ("[Daemon]\n\nLauncherSocket=/run/x/../launcher",
         #"/etc/bgtaskd/bgtaskd.conf:3: LauncherSocket: launcher socket path must be absolute and normalized: "/run/x/../launcher""#),
        ("[Daemon]\nLauncherSocket=/" + String(repeating: "l", count: 107),
         "/etc/bgtaskd/bgtaskd.conf:2: LauncherSocket: socket path is longer than 107 bytes"),
        ("[Daemon]\nMaxMessageSize=64 furlongs",
         #"/etc/bgtaskd/bgtaskd.conf:2: MaxMessageSize: invalid size "64 furlongs""#),
        ("[Daemon]\nMaxMessageSize=12",
         "/etc/bgtaskd/bgtaskd.conf:2: MaxMessageSize: size must be between 1KiB and 64MiB"),
        ("[Refresh]\nBackgroundAppRefresh=wifi",
         #"/etc/bgtaskd/bgtaskd.conf:2: BackgroundAppRefresh: invalid value "wifi", expected one of: on, unmetered, off"#),
        ("[Refresh]\nDefaultAppRefresh=maybe",
         #"/etc/bgtaskd/bgtaskd.conf:2: DefaultAppRefresh: invalid boolean "maybe""#),
        ("[Memory]\nPressureKill=perhaps",
         #"/etc/bgtaskd/bgtaskd.conf:2: PressureKill: invalid boolean "perhaps""#),
        ("[Memory]\nPressureThreshold=10",
         #"/etc/bgtaskd/bgtaskd.conf:2: PressureThreshold: invalid percentage "10""#),
        ("[Memory]\nPressureThreshold=150%",
         #"/etc/bgtaskd/bgtaskd.conf:2: PressureThreshold: invalid percentage "150%""#),
        ("[Memory]\nPressureThreshold=0%",
         "/etc/bgtaskd/bgtaskd.conf:2: PressureThreshold: must be greater than 0%"),
        ("[Memory]\nPressureWindowSec=100ms",
         "/etc/bgtaskd/bgtaskd.conf:2: PressureWindowSec: time span must be at least 500ms"),
        ("[Memory]\nPressureWindowSec=1min",
         "/etc/bgtaskd/bgtaskd.conf:2: PressureWindowSec: time span must be at most 10s"),
        ("[Lifecycle]\nExpirationWarningSec=30s",
         "/etc/bgtaskd/bgtaskd.conf:2: ExpirationWarningSec: must be less than BackgroundTimeBudgetSec (30s)"),
        ("[Lifecycle]\nBackgroundTimeBudgetSec=3s",
         "/etc/bgtaskd/bgtaskd.conf:2: BackgroundTimeBudgetSec: must be greater than ExpirationWarningSec (5s)"),
        ("[Lifecycle]\nRefreshTaskBudgetSec=10s\nExpirationWarningSec=10s\nBackgroundTimeBudgetSec=1min",
         "/etc/bgtaskd/bgtaskd.conf:3: ExpirationWarningSec: must be less than RefreshTaskBudgetSec (10s)"),
        ("[Lifecycle]\nKillTimeoutSec=5 \\\n  parsecs",
         #"/etc/bgtaskd/bgtaskd.conf:2: KillTimeoutSec: invalid time span "5    parsecs""#),
        ("[Daemon\nSocket=/x",
         #"/etc/bgtaskd/bgtaskd.conf:1: invalid section header "[Daemon""#),
        ("[Daemon]\nSocket /x",
         #"/etc/bgtaskd/bgtaskd.conf:2: missing '=', not an assignment: "Socket /x""#),
    ] as [(String, String)])
    func errorMessage(text: String, message: String) {
        let result = parse(text)
        #expect(result.errors == [message])
        #expect(result.config == nil)
    }

    @Test func allErrorsAreReportedAndFirstIsThrown() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try directory.write("bgtaskd.conf", """
            [Lifecycle]
            KillTimeoutSec=soon
            LaunchTimeoutSec=later
            """)
        let all = DaemonConfig.loadCollectingErrors(configDirectory: directory.path)
        #expect(all.errors.map(\.description) == [
            #"\#(path):2: KillTimeoutSec: invalid time span "soon""#,
            #"\#(path):3: LaunchTimeoutSec: invalid time span "later""#,
        ])
        #expect(all.config == nil)
        #expect(throws: all.errors[0]) {
            try DaemonConfig.load(configDirectory: directory.path)
        }
        let error = all.errors[0]
        #expect(error.file == path)
        #expect(error.line == 2)
        #expect(error.key == "KillTimeoutSec")
        #expect(error.kind == .invalidTimeSpan("soon"))
    }

    @Test func unknownKeysAndSectionsAreWarnings() throws {
        let result = parse("""
            Stray=1
            [Daemon]
            Sockett=/x
            X-Vendor=ignored silently
            [Frobnicate]
            Key=1
            [X-Extension]
            Key=2
            [Lifecycle]
            KillTimeoutSec=3s
            """)
        #expect(result.errors == [])
        #expect(result.warnings == [
            "/etc/bgtaskd/bgtaskd.conf:5: unknown section [Frobnicate], ignored",
            "/etc/bgtaskd/bgtaskd.conf:1: Stray: assignment outside of any section, ignored",
            "/etc/bgtaskd/bgtaskd.conf:3: Sockett: unknown key, ignored",
        ])
        #expect(result.config?.killTimeoutUSec == 3 * Self.second)
    }

    @Test func missingFilesMeanDefaults() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let loaded = try DaemonConfig.load(configDirectory: directory.path)
        #expect(loaded.config == DaemonConfig())
        #expect(loaded.warnings.isEmpty)
        let nowhere = try DaemonConfig.load(configDirectory: directory.path + "/does-not-exist")
        #expect(nowhere.config == DaemonConfig())
    }

    @Test func dropInsApplyInLexicalOrderAfterTheMainFile() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("bgtaskd.conf", """
            [Lifecycle]
            KillTimeoutSec=1s
            LaunchTimeoutSec=1s
            WillTerminateTimeoutSec=1s
            [Daemon]
            FreezerBackend=signal
            """)
        try directory.write("bgtaskd.conf.d/50-b.conf", "[Lifecycle]\nKillTimeoutSec=50s\nLaunchTimeoutSec=50s\n")
        try directory.write("bgtaskd.conf.d/10-a.conf", "[Lifecycle]\nKillTimeoutSec=10s\nLaunchTimeoutSec=10s\nWillTerminateTimeoutSec=10s\n")
        try directory.write("bgtaskd.conf.d/90-c.conf", "[Lifecycle]\nKillTimeoutSec=90s\n")
        try directory.write("bgtaskd.conf.d/99-ignored.conf.disabled", "[Lifecycle]\nKillTimeoutSec=99s\n")
        try directory.write("bgtaskd.conf.d/.hidden.conf", "[Lifecycle]\nKillTimeoutSec=98s\n")
        try directory.write("bgtaskd.conf.d/20-reset.conf", "[Daemon]\nFreezerBackend=\n")
        let config = try DaemonConfig.load(configDirectory: directory.path).config
        #expect(config.killTimeoutUSec == 90 * Self.second)
        #expect(config.launchTimeoutUSec == 50 * Self.second)
        #expect(config.willTerminateTimeoutUSec == 10 * Self.second)
        #expect(config.freezerBackend == .auto)
    }

    @Test func dropInErrorNamesTheDropIn() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("bgtaskd.conf", "[Lifecycle]\nKillTimeoutSec=1s\n")
        let dropIn = try directory.write("bgtaskd.conf.d/10-bad.conf", "# local\n[Refresh]\nDefaultAppRefresh=sometimes\n")
        #expect(throws: ConfigError(.invalidBoolean("sometimes"), at: SourceLocation(file: dropIn, line: 3), key: "DefaultAppRefresh")) {
            try DaemonConfig.load(configDirectory: directory.path)
        }
    }

    @Test func crossCheckBlamesTheLaterFile() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("bgtaskd.conf", "[Lifecycle]\nExpirationWarningSec=10s\n")
        let dropIn = try directory.write("bgtaskd.conf.d/10-short.conf", "[Lifecycle]\n\nBackgroundTimeBudgetSec=10s\n")
        let errors = DaemonConfig.loadCollectingErrors(configDirectory: directory.path).errors.map(\.description)
        #expect(errors == ["\(dropIn):3: BackgroundTimeBudgetSec: must be greater than ExpirationWarningSec (10s)"])
    }

    @Test func unreadableFileIsAnError() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try FileManager.default.createDirectory(
            atPath: directory.path + "/bgtaskd.conf", withIntermediateDirectories: true)
        let bad = try directory.write("bgtaskd.conf.d/10-latin1.conf", "")
        try Data([0x5B, 0x41, 0x5D, 0x0A, 0xE9, 0x0A]).write(to: URL(fileURLWithPath: bad))
        let errors = DaemonConfig.loadCollectingErrors(configDirectory: directory.path).errors.map(\.description)
        #expect(errors == [
            "\(directory.path)/bgtaskd.conf: cannot read file: is a directory",
            "\(bad): file is not valid UTF-8",
        ])
    }

    /// The shipped config/bgtaskd.conf documents every key with its default.
    @Test func repositoryConfigListsEveryKeyWithItsDefault() throws {
        let path = repositoryRoot() + "/config/bgtaskd.conf"
        let text = try String(contentsOfFile: path, encoding: .utf8)

        // As shipped (everything commented out): exactly the defaults, nothing to warn about.
        let shipped = DaemonConfig.parse([ConfigSource(path: path, text: text)])
        #expect(shipped.errors.isEmpty)
        #expect(shipped.warnings.isEmpty)
        #expect(shipped.config == DaemonConfig())

        // Uncommented: still exactly the defaults, and every key appears once, in its section.
        var uncommented: [String] = []
        var seen: [ConfigKeyName] = []
        var section = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("[") {
                section = String(line.dropFirst().dropLast())
            }
            if line.hasPrefix("#"), let equals = line.firstIndex(of: "="),
               !line.dropFirst().contains(" "), line.dropFirst().first?.isLetter == true
            {
                seen.append(ConfigKeyName(section: section, key: String(line[line.index(after: line.startIndex)..<equals])))
                uncommented.append(String(line.dropFirst()))
            } else {
                uncommented.append(String(line))
            }
        }
        #expect(seen == DaemonConfig.keys)
        let active = DaemonConfig.parse([ConfigSource(path: path, text: uncommented.joined(separator: "\n"))])
        #expect(active.errors.map(\.description) == [])
        #expect(active.warnings.map(\.description) == [])
        #expect(active.config == DaemonConfig())
    }
}
