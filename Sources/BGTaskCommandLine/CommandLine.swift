#if canImport(Glibc)
import Glibc
#endif

/// The command line of the daemons (`bgtaskd`, `bgtaskd-launcher`, `bgtaskd-focus`): long options that take
/// a value (`--name VALUE` or `--name=VALUE`), flags (`--name`), `--help`/`-h` and `--version`. Parsed by hand, not with
/// ArgumentParser, which links FoundationEssentials: 6.7 MB installed and 2 MB of a daemon's RSS for a
/// handful of options (docs/performance.md). `bgtaskctl`'s verbs: ``VerbLine``.
public struct CommandLineSpec: Sendable {
    public struct Option: Sendable {
        public var name: String
        public var help: String
        public var defaultValue: String?
        /// A flag takes no value; given, its value is "true".
        public var isFlag: Bool
        /// One-letter names (`-n`), also given as `-n VALUE` or `-nVALUE` (``VerbLine`` only).
        public var shortNames: [Character] = []
        /// The value's name in help and errors (`--socket <path>`); default: the option's name.
        public var valueName: String?

        public init(_ name: String, help: String, defaultValue: String? = nil, short: [Character] = [], valueName: String? = nil) {
            self.name = name
            self.help = help
            self.defaultValue = defaultValue
            self.isFlag = false
            self.shortNames = short
            self.valueName = valueName
        }

        public static func flag(_ name: String, help: String, short: [Character] = []) -> Option {
            var o = Option(name, help: help, short: short)
            o.isFlag = true
            return o
        }

        /// `--name <value>`, or `--name` for a flag, as help and errors write it.
        public var spelling: String { isFlag ? "--\(name)" : "--\(name) <\(valueName ?? name)>" }
    }

    public var command: String
    public var abstract: String
    public var discussion: String
    public var version: String
    public var options: [Option]

    public init(command: String, abstract: String, discussion: String = "", version: String, options: [Option]) {
        self.command = command
        self.abstract = abstract
        self.discussion = discussion
        self.version = version
        self.options = options
    }

    /// What to print and the exit status, instead of running.
    public struct Exit: Error, Equatable, Sendable {
        public var text: String
        public var status: Int32

        public init(text: String, status: Int32) {
            self.text = text
            self.status = status
        }
    }

    var synopsis: String {
        "\(command) " + options.map { $0.isFlag ? "[--\($0.name)]" : "[--\($0.name) <\($0.name)>]" }.joined(separator: " ")
    }

    public var usage: String {
        var text = "OVERVIEW: \(abstract)\n\n"
        if !discussion.isEmpty { text += discussion + "\n\n" }
        text += "USAGE: \(synopsis)\n\nOPTIONS:\n"
        for o in options {
            text += (o.isFlag ? "  --\(o.name)" : "  --\(o.name) <\(o.name)>") + "\n        \(o.help)"
            if let d = o.defaultValue { text += " (default: \(d))" }
            text += "\n"
        }
        text += "  --version\n        Show the version.\n  -h, --help\n        Show help information.\n"
        return text
    }

    /// A usage error, as ArgumentParser words them (exit status 64, EX_USAGE).
    public func usageError(_ message: String) -> Exit {
        Exit(text: "Error: \(message)\nUsage: \(synopsis)\n  See '\(command) --help' for more information.\n", status: 64)
    }

    /// The value of each option given (the last one wins), or what to print and the exit status.
    public func parse(_ arguments: [String]) -> Result<[String: String], Exit> {
        var values: [String: String] = [:]
        var i = 0
        while i < arguments.count {
            let argument = arguments[i]
            i += 1
            if argument == "-h" || argument == "--help" { return .failure(Exit(text: usage, status: 0)) }
            if argument == "--version" { return .failure(Exit(text: version + "\n", status: 0)) }
            var name = Substring(argument)
            var value: String?
            if let eq = argument.firstIndex(of: "=") {
                name = argument[..<eq]
                value = String(argument[argument.index(after: eq)...])
            }
            guard name.hasPrefix("--"), let option = options.first(where: { $0.name == name.dropFirst(2) }) else {
                return .failure(usageError("Unknown option '\(argument)'"))
            }
            if option.isFlag {
                guard value == nil else { return .failure(usageError("Unknown option '\(argument)'")) }
                values[option.name] = "true"
                continue
            }
            if value == nil {
                guard i < arguments.count else { return .failure(usageError("Missing value for '--\(option.name) <\(option.name)>'")) }
                value = arguments[i]
                i += 1
            }
            values[option.name] = value
        }
        return .success(values)
    }

    /// The integer value of option `name` (nil: not given), or the usage error naming it.
    public func integer(_ values: [String: String], _ name: String) -> Result<Int?, Exit> {
        guard let text = values[name] else { return .success(nil) }
        guard let n = Int(text) else {
            return .failure(usageError("The value '\(text)' is invalid for '--\(name) <\(name)>'"))
        }
        return .success(n)
    }

    /// Prints `exit`'s text (stdout for help and version, stderr for errors) and exits with its status.
    public static func finish(_ exit: Exit) -> Never {
        var text = exit.text
        text.withUTF8 { bytes in _ = Glibc.write(exit.status == 0 ? 1 : 2, bytes.baseAddress, bytes.count) }
        Glibc.exit(exit.status)
    }
}
