/// What a reload can and cannot change (SPEC §9): most keys apply at once; a few are read only at start.
extension DaemonConfig {
    /// Keys whose value is used only when the daemon starts: the socket it binds, the freezer it makes, the
    /// cgroup subtree it sets up, the launcher it talks to. A reload that changes one says so.
    public static let startOnlyKeys: [(section: String, key: String)] = [
        ("Daemon", "Socket"), ("Daemon", "FreezerBackend"), ("Daemon", "CgroupRoot"), ("Daemon", "LauncherSocket"),
    ]

    /// `[Section] Key` of every key whose value differs between `self` and `old`, in schema order.
    public func changedKeys(from old: DaemonConfig) -> [(section: String, key: String)] {
        Self.schema.keys.filter { $0.format(self) != $0.format(old) }.map { ($0.section, $0.key) }
    }

    /// `key`'s value as it would be written in the file (nil: not a key of bgtaskd.conf).
    public func formatted(section: String, key: String) -> String? {
        Self.schema.definition(section: section, key: key)?.format(self)
    }

    /// Where each key was last assigned in `configDirectory`'s bgtaskd.conf and drop-ins (by key name).
    public static func assignments(configDirectory: String) -> [String: SourceLocation] {
        var assigned = AssignmentLog()
        var config = DaemonConfig()
        var errors: [ConfigError] = []
        var warnings: [ConfigWarning] = []
        for source in sources(configDirectory: configDirectory).sources {
            schema.apply(ParsedConfigFile.parse(source.text, file: source.path), to: &config, errors: &errors,
                         warnings: &warnings, assigned: &assigned)
        }
        return assigned.locations
    }
}
