/// A command line with verbs (`bgtaskctl VERB [OPTIONS] [ARGUMENTS]`), parsed by hand as ArgumentParser
/// parsed it, without its FoundationEssentials: options and arguments in any order, `--name VALUE`,
/// `--name=VALUE`, `-n VALUE`, `-nVALUE`, flags, `--` (the rest are arguments), a verb whose last argument
/// captures everything from its first argument or unknown option on (`log`, `hold`), `--help`/`-h` per verb,
/// `help VERB`, `--version` (also after the verb). Usage errors are worded as ArgumentParser worded them.
public struct VerbLine: Sendable {
    /// A positional argument.
    public struct Argument: Sendable {
        public var name: String
        public var help: String
        public var isOptional: Bool
        /// Takes every remaining argument (zero or more).
        public var isRepeating: Bool

        public init(_ name: String, help: String, optional: Bool = false, repeating: Bool = false) {
            self.name = name
            self.help = help
            self.isOptional = optional || repeating
            self.isRepeating = repeating
        }

        var spelling: String { isRepeating ? "<\(name)> ..." : "<\(name)>" }
    }

    public struct Verb: Sendable {
        public var name: String
        public var abstract: String
        /// Replaces the generated `USAGE:` line(s).
        public var usage: String?
        public var discussion: String
        public var options: [CommandLineSpec.Option]
        public var arguments: [Argument]
        /// The last argument (repeating) captures every argument from the first one that is not one of this
        /// verb's options on, dashes and `--` included.
        public var passthrough: Bool

        public init(
            _ name: String, abstract: String, usage: String? = nil, discussion: String = "",
            options: [CommandLineSpec.Option] = [], arguments: [Argument] = [], passthrough: Bool = false
        ) {
            self.name = name
            self.abstract = abstract
            self.usage = usage
            self.discussion = discussion
            self.options = options
            self.arguments = arguments
            self.passthrough = passthrough
        }
    }

    /// A verb's parsed command line.
    public struct Parsed: Sendable, Equatable {
        public var verb: String
        /// The value of each option given (the last one wins); "true" for a flag.
        public var options: [String: String]
        /// The positional arguments in order (with a passthrough verb, the captured ones last).
        public var arguments: [String]

        public init(verb: String, options: [String: String] = [:], arguments: [String] = []) {
            self.verb = verb
            self.options = options
            self.arguments = arguments
        }

        public func flag(_ name: String) -> Bool { options[name] != nil }
    }

    /// Instead of running: text to print on stdout (help, version; exit 0), or a usage error (one line).
    public enum Stop: Error, Equatable, Sendable {
        case help(String)
        case usage(String)
    }

    public var command: String
    public var abstract: String
    public var discussion: String
    public var version: String
    public var verbs: [Verb]

    public init(command: String, abstract: String, discussion: String = "", version: String, verbs: [Verb]) {
        self.command = command
        self.abstract = abstract
        self.discussion = discussion
        self.version = version
        self.verbs = verbs
    }

    public func verb(_ name: String) -> Verb? { verbs.first { $0.name == name } }

    /// The verb and its options and arguments, or help, version or a usage error.
    public func parse(_ arguments: [String]) -> Result<Parsed, Stop> {
        guard let first = arguments.first else { return .failure(.help(help)) }
        switch first {
        case "-h", "--help": return .failure(.help(help))
        case "--version": return .failure(.help(version + "\n"))
        case "help":
            guard arguments.count > 1 else { return .failure(.help(help)) }
            guard let verb = verb(arguments[1]) else { return .failure(.usage("Unexpected argument '\(arguments[1])'")) }
            return .failure(.help(help(verb)))
        default:
            guard let verb = verb(first) else {
                return .failure(.usage(first.hasPrefix("-") ? "Unknown option '\(first)'" : "Unexpected argument '\(first)'"))
            }
            return parse(verb, Array(arguments.dropFirst()))
        }
    }

    /// `arguments` (after the verb) parsed as `verb`'s.
    public func parse(_ verb: Verb, _ arguments: [String]) -> Result<Parsed, Stop> {
        var parsed = Parsed(verb: verb.name)
        var positional: [String] = []
        let fixed = verb.arguments.filter { !$0.isRepeating }.count
        var i = 0
        var onlyArguments = false
        while i < arguments.count {
            let a = arguments[i]
            // A passthrough verb captures everything from its first argument past the fixed ones, or its
            // first unknown option (or `--`), on.
            func capture() { positional += arguments[i...] }
            if onlyArguments {
                positional.append(a)
                i += 1
                continue
            }
            if a == "-h" || a == "--help" { return .failure(.help(help(verb))) }
            if a == "--version" { return .failure(.help(version + "\n")) }
            if a == "--" {
                if verb.passthrough { capture(); break }
                onlyArguments = true
                i += 1
                continue
            }
            if a.hasPrefix("--") {
                var name = Substring(a.dropFirst(2))
                var value: String?
                if let eq = name.firstIndex(of: "=") {
                    value = String(name[name.index(after: eq)...])
                    name = name[..<eq]
                }
                guard let option = verb.options.first(where: { $0.name == name }) else {
                    if verb.passthrough { capture(); break }
                    return .failure(.usage("Unknown option '\(a)'"))
                }
                if option.isFlag {
                    if let value {
                        return .failure(.usage("The option '--\(option.name)' does not take any value, but '\(value)' was specified."))
                    }
                    parsed.options[option.name] = "true"
                    i += 1
                    continue
                }
                if value == nil {
                    guard i + 1 < arguments.count else { return .failure(.usage("Missing value for '\(option.spelling)'")) }
                    value = arguments[i + 1]
                    i += 1
                }
                parsed.options[option.name] = value
                i += 1
                continue
            }
            if a.hasPrefix("-"), a.count > 1, let letter = a.dropFirst().first {
                guard let option = verb.options.first(where: { $0.shortNames.contains(letter) }) else {
                    if verb.passthrough { capture(); break }
                    return .failure(.usage("Unknown option '\(a)'"))
                }
                let attached = String(a.dropFirst(2))
                if option.isFlag {
                    guard attached.isEmpty else { return .failure(.usage("Unknown option '\(a)'")) }
                    parsed.options[option.name] = "true"
                } else if !attached.isEmpty {
                    parsed.options[option.name] = attached
                } else {
                    guard i + 1 < arguments.count else { return .failure(.usage("Missing value for '-\(letter) <\(option.valueName ?? option.name)>'")) }
                    parsed.options[option.name] = arguments[i + 1]
                    i += 1
                }
                i += 1
                continue
            }
            if verb.passthrough, positional.count >= fixed { capture(); break }
            positional.append(a)
            i += 1
        }
        // Each declared argument in order: required ones must be there; nothing may be left over.
        var k = 0
        for argument in verb.arguments {
            if argument.isRepeating {
                k = positional.count
                break
            }
            if k < positional.count {
                k += 1
            } else if !argument.isOptional {
                return .failure(.usage("Missing expected argument '\(argument.spelling)'"))
            }
        }
        if k < positional.count { return .failure(.usage("Unexpected argument '\(positional[k])'")) }
        parsed.arguments = positional
        return .success(parsed)
    }

    /// The usage error for a value that is not one of `choices`, as ArgumentParser words it.
    public static func invalidValue(_ value: String, for spelling: String, oneOf choices: [String]) -> Stop {
        // ArgumentParser's words: 'on' and 'off'; 'on', 'unmetered' or 'off'.
        let quoted = choices.map { "'\($0)'" }
        let listed = quoted.count < 2 ? quoted.joined()
            : quoted.dropLast().joined(separator: ", ") + (quoted.count == 2 ? " and " : " or ") + quoted[quoted.count - 1]
        return .usage("The value '\(value)' is invalid for '\(spelling)'. Please provide one of \(listed).")
    }

    // MARK: - Help

    /// `bgtaskctl --help`: the verbs under `SUBCOMMANDS:` (IntegrationTests/check-docs.sh reads them there).
    public var help: String {
        var text = "OVERVIEW: \(abstract)\n\n"
        if !discussion.isEmpty { text += discussion + "\n\n" }
        text += "USAGE: \(command) <subcommand>\n\nOPTIONS:\n"
        text += Self.row("--version", "Show the version.") + Self.row("-h, --help", "Show help information.")
        text += "\nSUBCOMMANDS:\n"
        for verb in verbs { text += Self.row(verb.name, verb.abstract) }
        text += "\n  See '\(command) help <subcommand>' for detailed help.\n"
        return text
    }

    /// `bgtaskctl VERB --help`: its options one a line, `  -n, --lines <lines>` (check-docs.sh reads them).
    public func help(_ verb: Verb) -> String {
        var text = "OVERVIEW: \(verb.abstract)\n\n"
        if !verb.discussion.isEmpty { text += verb.discussion + "\n\n" }
        if let usage = verb.usage {
            text += "USAGE:\n" + usage.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n") + "\n\n"
        } else {
            let parts = verb.options.map { "[\($0.spelling)]" }
                + verb.arguments.map { $0.isOptional ? "[\($0.spelling)]" : $0.spelling }
            text += "USAGE: \(([command, verb.name] + parts).joined(separator: " "))\n\n"
        }
        if !verb.arguments.isEmpty {
            text += "ARGUMENTS:\n"
            for a in verb.arguments { text += Self.row(a.spelling, a.help) }
            text += "\n"
        }
        text += "OPTIONS:\n"
        for o in verb.options {
            let names = o.shortNames.map { "-\($0), " }.joined() + o.spelling
            text += Self.row(names, o.help + (o.defaultValue.map { " (default: \($0))" } ?? ""))
        }
        text += Self.row("--version", "Show the version.") + Self.row("-h, --help", "Show help information.")
        return text
    }

    /// `  NAME  help`, the help in a column from 26 (on the next line for a long name), as ArgumentParser.
    static func row(_ name: String, _ help: String) -> String {
        let head = "  " + name
        let column = 26
        if head.count < column - 1 { return head + String(repeating: " ", count: column - head.count) + help + "\n" }
        return head + "\n" + String(repeating: " ", count: column) + help + "\n"
    }
}
