// MARK: - Loading

extension DaemonConfig {
    /// Loads `bgtaskd.conf` and then `bgtaskd.conf.d/*.conf` (lexical order, later wins) from
    /// `configDirectory`. A missing file or directory is fine: the defaults apply.
    ///
    /// - Returns: the configuration and the warnings (unknown keys and sections).
    /// - Throws: the first error, in file order; use ``loadCollectingErrors(configDirectory:)`` for all of them.
    public static func load(
        configDirectory: String
    ) throws(ConfigError) -> (config: DaemonConfig, warnings: [ConfigWarning]) {
        let result = loadCollectingErrors(configDirectory: configDirectory)
        if let first = result.errors.first {
            throw first
        }
        return (result.config ?? DaemonConfig(), result.warnings)
    }

    /// Like ``load(configDirectory:)``, but reports every error. `config` is nil when there are errors.
    public static func loadCollectingErrors(
        configDirectory: String
    ) -> (config: DaemonConfig?, errors: [ConfigError], warnings: [ConfigWarning]) {
        var (sources, errors) = sources(configDirectory: configDirectory)
        let parsed = parse(sources)
        errors += parsed.errors
        return (errors.isEmpty ? parsed.config : nil, errors, parsed.warnings)
    }

    /// bgtaskd.conf and its drop-ins (lexical order) as text, and the files that could not be read.
    static func sources(configDirectory: String) -> (sources: [ConfigSource], errors: [ConfigError]) {
        let main = joinPath(configDirectory, fileName)
        var sources: [ConfigSource] = []
        var errors: [ConfigError] = []
        var dropIns: [String] = []
        switch listDirectory(joinPath(configDirectory, dropInDirectoryName), suffix: ".conf") {
        case .success(let paths): dropIns = paths
        case .failure(let error): errors.append(error)
        }
        for path in [main] + dropIns {
            switch readTextFile(path) {
            case .missing: continue
            case .text(let text): sources.append(ConfigSource(path: path, text: text))
            case .failed(let kind): errors.append(ConfigError(kind, at: SourceLocation(file: path, line: 0)))
            }
        }
        return (sources, errors)
    }

    /// Parses files given as text, in order (later wins), and validates the result.
    /// `config` is nil when there are errors.
    public static func parse(
        _ sources: [ConfigSource]
    ) -> (config: DaemonConfig?, errors: [ConfigError], warnings: [ConfigWarning]) {
        var config = DaemonConfig()
        var errors: [ConfigError] = []
        var warnings: [ConfigWarning] = []
        var assigned = AssignmentLog()
        for source in sources {
            let file = ParsedConfigFile.parse(source.text, file: source.path)
            schema.apply(file, to: &config, errors: &errors, warnings: &warnings, assigned: &assigned)
        }
        if errors.isEmpty {
            errors += config.crossCheck(assigned)
        }
        return (errors.isEmpty ? config : nil, errors, warnings)
    }

    /// Relations between keys. The error is reported where the later of the two keys was set.
    private func crossCheck(_ assigned: AssignmentLog) -> [ConfigError] {
        var errors: [ConfigError] = []
        let warning = "ExpirationWarningSec"
        let budgets: [(String, Int64)] = [
            ("BackgroundTimeBudgetSec", backgroundTimeBudgetUSec),
            ("RefreshTaskBudgetSec", refreshTaskBudgetUSec),
            ("ProcessingTaskBudgetSec", processingTaskBudgetUSec),
        ]
        // Smallest budget first, so that a too-long warning is reported once, against the tightest budget.
        let ordered = budgets.enumerated().sorted { ($0.element.1, $0.offset) < ($1.element.1, $1.offset) }.map(\.element)
        for (budgetKey, budget) in ordered where expirationWarningUSec >= budget {
            let blamed = assigned.later(warning, budgetKey) ?? warning
            if errors.contains(where: { $0.key == blamed }) {
                continue
            }
            let location = assigned.location(blamed) ?? SourceLocation(file: "(defaults)", line: 0)
            let message = blamed == warning
                ? "must be less than \(budgetKey) (\(SystemdTimeSpan.format(budget)))"
                : "must be greater than \(warning) (\(SystemdTimeSpan.format(expirationWarningUSec)))"
            errors.append(ConfigError(.invalid(message), at: location, key: blamed))
        }
        return errors
    }

    static let schema = Schema<DaemonConfig>([
        KeyDefinition(section: "Daemon", key: "Socket", apply: { config, value throws(ConfigError.Kind) in
            if value.isEmpty { config.socket = DaemonConfig().socket; return }
            guard isAbsoluteCleanPath(value) else {
                throw .invalid("socket path must be absolute and normalized: \(quoted(value))")
            }
            guard value.utf8.count <= 107 else {
                throw .invalid("socket path is longer than 107 bytes")
            }
            config.socket = value
        }, format: { $0.socket }),
        KeyDefinition(section: "Daemon", key: "ControlGroup", apply: { config, value throws(ConfigError.Kind) in
            if value.isEmpty { config.controlGroup = nil; return }
            guard let group = Account.parse(value) else {
                throw .invalid("invalid group name or gid \(quoted(value))")
            }
            config.controlGroup = group
        }, format: { $0.controlGroup?.description ?? "" }),
        KeyDefinition(section: "Daemon", key: "FreezerBackend", apply: { config, value throws(ConfigError.Kind) in
            config.freezerBackend = value.isEmpty ? .auto : try parseChoice(value, as: FreezerBackend.self)
        }, format: { $0.freezerBackend.rawValue }),
        KeyDefinition(section: "Daemon", key: "CgroupRoot", apply: { config, value throws(ConfigError.Kind) in
            if value.isEmpty { config.cgroupRoot = nil; return }
            guard isAbsoluteCleanPath(value) || isRelativeCleanPath(value) else {
                throw .invalid("must be a normalized path, absolute or relative to the cgroup2 mount: \(quoted(value))")
            }
            config.cgroupRoot = value
        }, format: { $0.cgroupRoot ?? "" }),
        KeyDefinition(section: "Daemon", key: "LauncherSocket", apply: { config, value throws(ConfigError.Kind) in
            if value.isEmpty { config.launcherSocket = nil; return }
            guard isAbsoluteCleanPath(value) else {
                throw .invalid("launcher socket path must be absolute and normalized: \(quoted(value))")
            }
            guard value.utf8.count <= 107 else {
                throw .invalid("socket path is longer than 107 bytes")
            }
            config.launcherSocket = value
        }, format: { $0.launcherSocket ?? "" }),
        KeyDefinition(section: "Daemon", key: "MaxMessageSize", apply: { config, value throws(ConfigError.Kind) in
            if value.isEmpty { config.maxMessageSize = DaemonConfig().maxMessageSize; return }
            guard let size = ByteSize.parse(value) else { throw .invalidSize(value) }
            guard size >= 1024, size <= 64 * 1024 * 1024 else {
                throw .invalid("size must be between 1KiB and 64MiB")
            }
            config.maxMessageSize = Int(size)
        }, format: { ByteSize.format(Int64($0.maxMessageSize)) }),
        KeyDefinition(section: "Daemon", key: "MaxConnectionsPerUser", apply: { config, value throws(ConfigError.Kind) in
            if value.isEmpty { config.maxConnectionsPerUser = DaemonConfig().maxConnectionsPerUser; return }
            guard let n = parseDecimal(value) else { throw .invalidInteger(value) }
            guard n >= 1, n <= 1_000_000 else { throw .invalid("must be between 1 and 1000000") }
            config.maxConnectionsPerUser = n
        }, format: { String($0.maxConnectionsPerUser) }),
        time("Daemon", "IncompleteMessageTimeoutSec", \.incompleteMessageTimeoutUSec, minimum: 1000),
        KeyDefinition(section: "Daemon", key: "KernelWakeLock", apply: { config, value throws(ConfigError.Kind) in
            config.kernelWakeLock = value.isEmpty ? false : try parseBool(value)
        }, format: { $0.kernelWakeLock ? "yes" : "no" }),
        KeyDefinition(section: "Daemon", key: "RecordInputs", apply: { config, value throws(ConfigError.Kind) in
            config.recordInputs = value.isEmpty ? true : try parseBool(value)
        }, format: { $0.recordInputs ? "yes" : "no" }),
        KeyDefinition(section: "Daemon", key: "RecordMaxBytes", apply: { config, value throws(ConfigError.Kind) in
            if value.isEmpty { config.recordMaxBytes = DaemonConfig().recordMaxBytes; return }
            guard let size = ByteSize.parse(value) else { throw .invalidSize(value) }
            guard size >= 64 * 1024, size <= 1024 * 1024 * 1024 else {
                throw .invalid("size must be between 64KiB and 1GiB")
            }
            config.recordMaxBytes = Int(size)
        }, format: { ByteSize.format(Int64($0.recordMaxBytes)) }),

        time("Lifecycle", "DidEnterBackgroundTimeoutSec", \.didEnterBackgroundTimeoutUSec, minimum: 1),
        time("Lifecycle", "BackgroundTimeBudgetSec", \.backgroundTimeBudgetUSec, minimum: 1),
        time("Lifecycle", "ExpirationWarningSec", \.expirationWarningUSec, minimum: 0),
        KeyDefinition(section: "Lifecycle", key: "MaxBackgroundTasksPerApp", apply: { config, value throws(ConfigError.Kind) in
            if value.isEmpty { config.maxBackgroundTasksPerApp = DaemonConfig().maxBackgroundTasksPerApp; return }
            guard let n = parseDecimal(value) else { throw .invalidInteger(value) }
            guard n >= 1, n <= 1_000_000 else { throw .invalid("must be between 1 and 1000000") }
            config.maxBackgroundTasksPerApp = n
        }, format: { String($0.maxBackgroundTasksPerApp) }),
        time("Lifecycle", "LaunchTimeoutSec", \.launchTimeoutUSec, minimum: 1),
        time("Lifecycle", "WillTerminateTimeoutSec", \.willTerminateTimeoutUSec, minimum: 1),
        time("Lifecycle", "KillTimeoutSec", \.killTimeoutUSec, minimum: 1),
        time("Lifecycle", "RefreshTaskBudgetSec", \.refreshTaskBudgetUSec, minimum: 1),
        time("Lifecycle", "ProcessingTaskBudgetSec", \.processingTaskBudgetUSec, minimum: 1),
        time("Lifecycle", "BusCallBudgetSec", \.busCallBudgetUSec, minimum: 1),
        time("Lifecycle", "LockRecheckSec", \.lockRecheckUSec, minimum: 1000),
        time("Lifecycle", "LockDeferralSec", \.lockDeferralUSec, minimum: 1000),
        time("Lifecycle", "FreezeTimeoutSec", \.freezeTimeoutUSec, minimum: 1000),
        time("Lifecycle", "FreezeRetrySec", \.freezeRetryUSec, minimum: 1000),
        time("Lifecycle", "SnapshotTimeoutSec", \.snapshotTimeoutUSec, minimum: 0, maximum: 60 * second),
        KeyDefinition(section: "Lifecycle", key: "SnapshotMaxBytes", apply: { config, value throws(ConfigError.Kind) in
            if value.isEmpty { config.snapshotMaxBytes = DaemonConfig().snapshotMaxBytes; return }
            guard let size = ByteSize.parse(value) else { throw .invalidSize(value) }
            guard size >= 8, size <= 1 << 30 else { throw .invalid("must be between 8 bytes and 1G") }
            config.snapshotMaxBytes = size
        }, format: { ByteSize.format($0.snapshotMaxBytes) }),
        time("Lifecycle", "ContinuedTaskStallSec", \.continuedTaskStallUSec, minimum: 1000),

        KeyDefinition(section: "Refresh", key: "BackgroundAppRefresh", apply: { config, value throws(ConfigError.Kind) in
            if value.isEmpty { config.backgroundAppRefresh = .on; return }
            if let flag = ConfigBoolean.parse(value) {
                config.backgroundAppRefresh = flag ? .on : .off
            } else {
                config.backgroundAppRefresh = try parseChoice(value, as: BackgroundAppRefreshMode.self)
            }
        }, format: { $0.backgroundAppRefresh.rawValue }),
        KeyDefinition(section: "Refresh", key: "DefaultAppRefresh", apply: { config, value throws(ConfigError.Kind) in
            config.defaultAppRefresh = value.isEmpty ? true : try parseBool(value)
        }, format: { $0.defaultAppRefresh ? "on" : "off" }),
        time("Refresh", "MinimumRefreshIntervalSec", \.minimumRefreshIntervalUSec, minimum: 0),
        time("Refresh", "ProcessingIdleSec", \.processingIdleUSec, minimum: 0),
    ] + refreshEnergyKeys + [

        KeyDefinition(section: "Memory", key: "PressureKill", apply: { config, value throws(ConfigError.Kind) in
            config.pressureKill = value.isEmpty ? false : try parseBool(value)
        }, format: { ConfigBoolean.format($0.pressureKill) }),
        KeyDefinition(section: "Memory", key: "PressureThreshold", apply: { config, value throws(ConfigError.Kind) in
            if value.isEmpty { config.pressureThreshold = DaemonConfig().pressureThreshold; return }
            guard let percent = Percentage.parse(value) else { throw .invalidPercentage(value) }
            guard percent.basisPoints > 0 else { throw .invalid("must be greater than 0%") }
            config.pressureThreshold = percent
        }, format: { $0.pressureThreshold.description }),
        time("Memory", "PressureWindowSec", \.pressureWindowUSec, minimum: 500_000, maximum: 10 * second),

        count("Journal", "JournalAssertionBurst", \.journalAssertionBurst, minimum: 0, maximum: 1_000_000),
        count("Journal", "JournalAssertionGlobalBurst", \.journalAssertionGlobalBurst, minimum: 0, maximum: 1_000_000),
        time("Journal", "JournalAssertionIntervalSec", \.journalAssertionIntervalUSec, minimum: 1_000, maximum: 3600 * second),
        count("Journal", "JournalDenialBurst", \.journalDenialBurst, minimum: 0, maximum: 1_000_000),
        count("Journal", "JournalDenialGlobalBurst", \.journalDenialGlobalBurst, minimum: 0, maximum: 1_000_000),
    ] + appsKeys + bucketKeys)

    private static func count(
        _ section: String,
        _ key: String,
        _ field: any WritableKeyPath<DaemonConfig, Int> & Sendable,
        minimum: Int,
        maximum: Int
    ) -> KeyDefinition<DaemonConfig> {
        KeyDefinition(section: section, key: key, apply: { config, value throws(ConfigError.Kind) in
            if value.isEmpty {
                config[keyPath: field] = DaemonConfig()[keyPath: field]
                return
            }
            guard let n = parseDecimal(value) else { throw .invalidInteger(value) }
            guard n >= minimum, n <= maximum else { throw .invalid("must be between \(minimum) and \(maximum)") }
            config[keyPath: field] = n
        }, format: { String($0[keyPath: field]) })
    }

    private static func time(
        _ section: String,
        _ key: String,
        _ field: any WritableKeyPath<DaemonConfig, Int64> & Sendable,
        minimum: Int64,
        maximum: Int64 = maxTime
    ) -> KeyDefinition<DaemonConfig> {
        KeyDefinition(section: section, key: key, apply: { config, value throws(ConfigError.Kind) in
            if value.isEmpty {
                config[keyPath: field] = DaemonConfig()[keyPath: field]
                return
            }
            config[keyPath: field] = try parseTime(value, in: minimum...maximum)
        }, format: { SystemdTimeSpan.format($0[keyPath: field]) })
    }
}
