/// The `[Apps]` section of bgtaskd.conf (SPEC §13): apps from desktop entries, exemptions, adoption of
/// apps started by others.
public struct AppsConfig: Hashable, Sendable {
    /// `DesktopEntries=`: every desktop entry of the data directories is an app.
    public var desktopEntries: Bool = true
    /// `DataDirs=`: the XDG data directories whose `applications/` are read, first wins (empty:
    /// `$XDG_DATA_DIRS`, else `/usr/local/share /usr/share /var/lib/flatpak/exports/share`).
    public var dataDirs: [String] = []
    /// `Exempt=`: app IDs never frozen (the shell, the on-screen keyboard). Each assignment adds; an
    /// empty one clears the list.
    public var exempt: [String] = []
    /// `Adopt=`: take units of systemd's desktop naming under users' `app.slice` as instances of apps.
    public var adopt: Bool = true
    /// `AdoptFrom=`: the cgroup holding the `user-UID.slice` cgroups (absolute, or relative to the
    /// cgroup2 mount).
    public var adoptFrom: String = "user.slice"

    public init() {}
}

extension DaemonConfig {
    static let appsKeys: [KeyDefinition<DaemonConfig>] = [
        KeyDefinition(section: "Apps", key: "DesktopEntries", apply: { config, value throws(ConfigError.Kind) in
            config.apps.desktopEntries = value.isEmpty ? true : try parseBool(value)
        }, format: { ConfigBoolean.format($0.apps.desktopEntries) }),
        KeyDefinition(section: "Apps", key: "DataDirs", apply: { config, value throws(ConfigError.Kind) in
            if value.isEmpty { config.apps.dataDirs = []; return }
            for word in value.split(whereSeparator: isWhitespace).map(String.init) {
                guard isAbsoluteCleanPath(word) else {
                    throw .invalid("data directory must be an absolute, normalized path: \(quoted(word))")
                }
                if !config.apps.dataDirs.contains(word) { config.apps.dataDirs.append(word) }
            }
        }, format: { $0.apps.dataDirs.joined(separator: " ") }),
        KeyDefinition(section: "Apps", key: "Exempt", apply: { config, value throws(ConfigError.Kind) in
            if value.isEmpty { config.apps.exempt = []; return }
            for word in value.split(whereSeparator: isWhitespace).map(String.init) {
                guard isValidIdentifier(word) else {
                    throw .invalid("invalid app ID \(quoted(word)): expected 1-255 characters of A-Za-z0-9._-")
                }
                if !config.apps.exempt.contains(word) { config.apps.exempt.append(word) }
            }
        }, format: { $0.apps.exempt.joined(separator: " ") }),
        KeyDefinition(section: "Apps", key: "Adopt", apply: { config, value throws(ConfigError.Kind) in
            config.apps.adopt = value.isEmpty ? true : try parseBool(value)
        }, format: { ConfigBoolean.format($0.apps.adopt) }),
        KeyDefinition(section: "Apps", key: "AdoptFrom", apply: { config, value throws(ConfigError.Kind) in
            if value.isEmpty { config.apps.adoptFrom = AppsConfig().adoptFrom; return }
            guard isAbsoluteCleanPath(value) || isRelativeCleanPath(value) else {
                throw .invalid("must be a normalized path, absolute or relative to the cgroup2 mount: \(quoted(value))")
            }
            config.apps.adoptFrom = value
        }, format: { $0.apps.adoptFrom }),
    ]
}

/// `a/b/c`: no leading `/`, no empty, `.` or `..` component.
func isRelativeCleanPath(_ path: String) -> Bool {
    !path.hasPrefix("/") && !path.isEmpty
        && path.split(separator: "/", omittingEmptySubsequences: false).allSatisfy { !$0.isEmpty && $0 != "." && $0 != ".." }
}
