import BGTaskCommandLine
import Testing

/// bgtaskctl's command line with verbs: the forms ArgumentParser accepted, and its usage errors' words.
@Suite struct VerbLineTests {
    typealias Option = CommandLineSpec.Option
    typealias Argument = VerbLine.Argument

    let line = VerbLine(
        command: "ctl", abstract: "A controller.", version: "1.2.3",
        verbs: [
            .init("status", abstract: "Show one.",
                  options: [Option("socket", help: "Socket.", valueName: "path"), .flag("json", help: "JSON."),
                            Option("lines", help: "Lines.", defaultValue: "10", short: ["n", "l"])],
                  arguments: [Argument("app", help: "The app.")]),
            .init("notify", abstract: "Post.", arguments: [Argument("name", help: "N."), Argument("app", help: "A.", optional: true)]),
            .init("refresh", abstract: "Refresh.", arguments: [Argument("arguments", help: "Rest.", repeating: true)]),
            .init("log", abstract: "Journal.", options: [Option("socket", help: "Socket.")],
                  arguments: [Argument("arguments", help: "Rest.", repeating: true)], passthrough: true),
            .init("hold", abstract: "Hold.", options: [Option("app", help: "App.")],
                  arguments: [Argument("command", help: "Command.", repeating: true)], passthrough: true),
        ])

    func parsed(_ args: [String]) throws -> VerbLine.Parsed { try line.parse(args).get() }

    func usage(_ args: [String]) -> String? {
        guard case .failure(.usage(let message)) = line.parse(args) else { return nil }
        return message
    }

    @Test func optionsAndArgumentsInAnyOrder() throws {
        let expected = VerbLine.Parsed(verb: "status", options: ["socket": "/s", "json": "true", "lines": "5"], arguments: ["a.b"])
        #expect(try parsed(["status", "a.b", "--socket", "/s", "--json", "-n", "5"]) == expected)
        #expect(try parsed(["status", "--socket=/s", "-n5", "--json", "a.b"]) == expected)
        #expect(try parsed(["status", "-l", "5", "--json", "--socket", "/s", "--", "a.b"]) == expected)
        // The last one wins; a value may start with a dash, as ArgumentParser took it.
        #expect(try parsed(["status", "a.b", "--socket", "/x", "--socket", "--json"]).options == ["socket": "--json"])
        #expect(try parsed(["notify", "n"]).arguments == ["n"])
        #expect(try parsed(["notify", "n", "a.b"]).arguments == ["n", "a.b"])
        #expect(try parsed(["refresh"]).arguments == [])
        #expect(try parsed(["refresh", "a.b", "on"]).arguments == ["a.b", "on"])
    }

    @Test func passthroughCapturesFromTheFirstUnknownOnward() throws {
        #expect(try parsed(["log"]).arguments == [])
        #expect(try parsed(["log", "-f"]).arguments == ["-f"])
        #expect(try parsed(["log", "a.b", "-n", "5", "--socket", "x"]).arguments == ["a.b", "-n", "5", "--socket", "x"])
        #expect(try parsed(["log", "--socket", "/s", "-o", "json"]) == .init(verb: "log", options: ["socket": "/s"], arguments: ["-o", "json"]))
        #expect(try parsed(["hold", "--app", "a.b", "--", "sh", "-c", "x"]).arguments == ["--", "sh", "-c", "x"])
        #expect(try parsed(["hold", "--app", "a.b", "true", "--flag"]) == .init(verb: "hold", options: ["app": "a.b"], arguments: ["true", "--flag"]))
    }

    @Test func usageErrorsAsArgumentParserWordedThem() {
        #expect(usage(["no-such-verb"]) == "Unexpected argument 'no-such-verb'")
        #expect(usage(["--bogus"]) == "Unknown option '--bogus'")
        #expect(usage(["status"]) == "Missing expected argument '<app>'")
        #expect(usage(["status", "a", "b"]) == "Unexpected argument 'b'")
        #expect(usage(["status", "a", "--bogus"]) == "Unknown option '--bogus'")
        #expect(usage(["status", "a", "-x"]) == "Unknown option '-x'")
        #expect(usage(["status", "a", "--json=1"]) == "The option '--json' does not take any value, but '1' was specified.")
        #expect(usage(["status", "a", "--socket"]) == "Missing value for '--socket <path>'")
        #expect(usage(["status", "a", "-n"]) == "Missing value for '-n <lines>'")
        #expect(usage(["notify"]) == "Missing expected argument '<name>'")
        #expect(usage(["notify", "n", "a", "b"]) == "Unexpected argument 'b'")
        #expect(VerbLine.invalidValue("maybe", for: "<setting>", oneOf: ["on", "off"])
            == .usage("The value 'maybe' is invalid for '<setting>'. Please provide one of 'on' and 'off'."))
        #expect(VerbLine.invalidValue("x", for: "--global <global>", oneOf: ["on", "unmetered", "off"])
            == .usage("The value 'x' is invalid for '--global <global>'. Please provide one of 'on', 'unmetered' or 'off'."))
    }

    @Test func helpPerVerbAndVersion() throws {
        for args in [["--help"], ["-h"], [], ["help"]] {
            guard case .failure(.help(let text)) = line.parse(args) else { Issue.record("\(args): no help"); continue }
            // IntegrationTests/check-docs.sh reads the verbs under SUBCOMMANDS:.
            #expect(text.contains("SUBCOMMANDS:\n  status                  Show one.\n  notify "))
        }
        for args in [["status", "--help"], ["status", "a", "-h"], ["help", "status"]] {
            guard case .failure(.help(let text)) = line.parse(args) else { Issue.record("\(args): no help"); continue }
            #expect(text.hasPrefix("OVERVIEW: Show one.\n"))
            #expect(text.contains("USAGE: ctl status [--socket <path>] [--json] [--lines <lines>] <app>\n"))
            // check-docs.sh reads the long options of each verb from lines `  -n, -l, --lines <lines>`.
            #expect(text.contains("\n  --socket <path>         Socket.\n  --json                  JSON.\n  -n, -l, --lines <lines>\n"))
            #expect(text.contains("(default: 10)"))
        }
        // A first -h of a passthrough verb is its own; after its first argument, journalctl's.
        guard case .failure(.help) = line.parse(["log", "-h"]) else { Issue.record("log -h"); return }
        #expect(try parsed(["log", "a.b", "-h"]).arguments == ["a.b", "-h"])
        #expect(line.parse(["--version"]) == .failure(.help("1.2.3\n")))
        #expect(line.parse(["help", "nope"]) == .failure(.usage("Unexpected argument 'nope'")))
    }
}

extension VerbLineTests {
    @Test func versionAfterTheVerbToo() {
        #expect(line.parse(["status", "--version"]) == .failure(.help("1.2.3\n")))
        #expect(line.parse(["hold", "--version"]) == .failure(.help("1.2.3\n")))
        guard case .failure(.help(let text)) = line.parse(["status", "-h"]) else { Issue.record("no help"); return }
        #expect(text.hasSuffix("  --version               Show the version.\n  -h, --help              Show help information.\n"))
    }
}
