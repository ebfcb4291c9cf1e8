import BGTaskCommandLine
import Testing

/// The daemons' hand-made command line: the forms ArgumentParser accepted, and its usage errors.
@Suite struct CommandLineTests {
    let spec = CommandLineSpec(
        command: "tool", abstract: "A tool.", version: "1.2.3",
        options: [.init("config-dir", help: "Where.", defaultValue: "/etc/x"), .init("socket", help: "Socket.")])

    @Test func valuesBothForms() throws {
        #expect(try spec.parse(["--config-dir", "/a", "--socket=/s"]).get() == ["config-dir": "/a", "socket": "/s"])
        #expect(try spec.parse([]).get() == [:])
        #expect(try spec.parse(["--socket=", "--socket", "/t"]).get() == ["socket": "/t"])
        #expect(try spec.parse(["--socket", "--config-dir"]).get() == ["socket": "--config-dir"])
    }

    @Test func helpAndVersion() {
        guard case .failure(let help) = spec.parse(["--socket", "/s", "-h"]) else { Issue.record("no help"); return }
        #expect(help.status == 0 && help.text.contains("--config-dir <config-dir>") && help.text.contains("(default: /etc/x)"))
        #expect(spec.parse(["--version"]) == .failure(.init(text: "1.2.3\n", status: 0)))
    }

    @Test func usageErrors() {
        for (args, message) in [(["--bogus"], "Unknown option '--bogus'"), (["socket"], "Unknown option 'socket'"),
                                (["--socket"], "Missing value for '--socket <socket>'"),
                                (["--sock=/s"], "Unknown option '--sock=/s'")] {
            guard case .failure(let e) = spec.parse(args) else { Issue.record("\(args) parsed"); continue }
            #expect(e.status == 64)
            #expect(e.text.hasPrefix("Error: \(message)\nUsage: tool [--config-dir <config-dir>] [--socket <socket>]"))
        }
    }
}

/// Flags and integer values (bgtaskd-focus).
@Suite struct CommandLineFlagTests {
    let spec = CommandLineSpec(
        command: "focus", abstract: "F.", version: "1",
        options: [.flag("no-wayland", help: "No."), .init("debounce", help: "Ms.", defaultValue: "300")])

    @Test func flagsTakeNoValue() throws {
        #expect(try spec.parse(["--no-wayland", "--debounce", "5"]).get() == ["no-wayland": "true", "debounce": "5"])
        guard case .failure(let e) = spec.parse(["--no-wayland=yes"]) else { Issue.record("parsed"); return }
        #expect(e.status == 64 && e.text.hasPrefix("Error: Unknown option '--no-wayland=yes'\nUsage: focus [--no-wayland] [--debounce <debounce>]"))
    }

    @Test func integers() {
        #expect(spec.integer(["debounce": "42"], "debounce") == .success(42))
        #expect(spec.integer([:], "debounce") == .success(nil))
        guard case .failure(let e) = spec.integer(["debounce": "x"], "debounce") else { Issue.record("parsed"); return }
        #expect(e.text.hasPrefix("Error: The value 'x' is invalid for '--debounce <debounce>'"))
    }
}
