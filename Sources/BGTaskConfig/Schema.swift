/// One known key of a file format: where it lives and how its value is applied.
struct KeyDefinition<Target>: Sendable {
    let section: String
    let key: String
    /// Applies one assignment. An empty value resets a scalar to its default and empties a list.
    let apply: @Sendable (inout Target, String) throws(ConfigError.Kind) -> Void
    /// The current value as it would be written in the file.
    let format: @Sendable (Target) -> String
}

/// The keys of a file format, and the generic part of applying parsed files to a value.
struct Schema<Target>: Sendable {
    let keys: [KeyDefinition<Target>]
    let sections: Set<String>
    private let index: [String: Int]

    init(_ keys: [KeyDefinition<Target>]) {
        self.keys = keys
        self.sections = Set(keys.map(\.section))
        var index: [String: Int] = [:]
        for (i, key) in keys.enumerated() {
            index[Self.qualified(key.section, key.key)] = i
        }
        self.index = index
    }

    static func qualified(_ section: String, _ key: String) -> String {
        "\(section)\u{0}\(key)"
    }

    func definition(section: String, key: String) -> KeyDefinition<Target>? {
        index[Self.qualified(section, key)].map { keys[$0] }
    }

    /// Applies the assignments of `file` to `target` in order. Unknown sections and keys become warnings;
    /// sections and keys starting with `X-` are extensions and ignored silently, like systemd.
    /// `assigned` records where each key (by name) was last assigned.
    func apply(
        _ file: ParsedConfigFile,
        to target: inout Target,
        errors: inout [ConfigError],
        warnings: inout [ConfigWarning],
        assigned: inout AssignmentLog
    ) {
        errors += file.errors
        for header in file.sections where !sections.contains(header.name) && !header.name.hasPrefix("X-") {
            warnings.append(ConfigWarning(.unknownSection(header.name), at: header.location))
        }
        for assignment in file.assignments {
            if assignment.section.isEmpty {
                warnings.append(ConfigWarning(.assignmentOutsideSection, at: assignment.location, key: assignment.key))
                continue
            }
            guard sections.contains(assignment.section) else {
                continue
            }
            guard let definition = definition(section: assignment.section, key: assignment.key) else {
                if !assignment.key.hasPrefix("X-") {
                    warnings.append(ConfigWarning(.unknownKey, at: assignment.location, key: assignment.key))
                }
                continue
            }
            do {
                try definition.apply(&target, assignment.value)
                assigned.record(assignment.key, at: assignment.location)
            } catch {
                errors.append(ConfigError(error, at: assignment.location, key: assignment.key))
            }
        }
    }
}

/// Where each key was last assigned, and in which order keys were assigned across all files.
struct AssignmentLog: Sendable {
    private(set) var locations: [String: SourceLocation] = [:]
    private var order: [String: Int] = [:]
    private var next = 0

    mutating func record(_ key: String, at location: SourceLocation) {
        locations[key] = location
        order[key] = next
        next += 1
    }

    func location(_ key: String) -> SourceLocation? {
        locations[key]
    }

    /// Of two keys, the one assigned last (nil if neither was assigned).
    func later(_ a: String, _ b: String) -> String? {
        switch (order[a], order[b]) {
        case (nil, nil): nil
        case (.some, nil): a
        case (nil, .some): b
        case (.some(let x), .some(let y)): x > y ? a : b
        }
    }
}

// MARK: - Value helpers shared by the file formats

/// Parses a finite time span, rejecting `infinity` and values outside `range`.
func parseTime(_ value: String, in range: ClosedRange<Int64>) throws(ConfigError.Kind) -> Int64 {
    guard let usec = SystemdTimeSpan.parse(value) else {
        throw .invalidTimeSpan(value)
    }
    if usec == SystemdTimeSpan.infinity {
        throw .infiniteTimeSpan
    }
    if usec < range.lowerBound {
        throw .invalid(range.lowerBound == 1
            ? "time span must be greater than 0"
            : "time span must be at least \(SystemdTimeSpan.format(range.lowerBound))")
    }
    if usec > range.upperBound {
        throw .invalid("time span must be at most \(SystemdTimeSpan.format(range.upperBound))")
    }
    return usec
}

func parseBool(_ value: String) throws(ConfigError.Kind) -> Bool {
    guard let flag = ConfigBoolean.parse(value) else {
        throw .invalidBoolean(value)
    }
    return flag
}

func parseChoice<Choice: RawRepresentable & CaseIterable>(
    _ value: String, as _: Choice.Type
) throws(ConfigError.Kind) -> Choice where Choice.RawValue == String {
    guard let choice = Choice(rawValue: value) else {
        throw .invalidChoice(value, allowed: Choice.allCases.map(\.rawValue))
    }
    return choice
}

/// Whether `path` is absolute, normalized enough to be used as is (no `.`/`..` components, no NUL).
func isAbsoluteCleanPath(_ path: String) -> Bool {
    guard path.hasPrefix("/"), !path.contains("\u{0}") else { return false }
    return !path.split(separator: "/").contains { $0 == "." || $0 == ".." }
}
