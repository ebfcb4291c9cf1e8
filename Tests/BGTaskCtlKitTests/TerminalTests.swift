import BGTaskCtlKit
import Testing

#if canImport(Glibc)
import Glibc
#endif

// The colour and width decisions, from a real descriptor: a pipe is no terminal; a pseudo-terminal (openpty)
// of a set width is one. The environment is handed in (TERM=xterm unless a case says otherwise).

/// A pseudo-terminal `columns` wide, closed after `body` (which gets the descriptor a program writes to).
func withPseudoTerminal<T>(columns: UInt16, _ body: (Int32) throws -> T) throws -> T {
    var master: Int32 = -1
    var slave: Int32 = -1
    var size = winsize(ws_row: 24, ws_col: columns, ws_xpixel: 0, ws_ypixel: 0)
    guard openpty(&master, &slave, nil, nil, &size) == 0 else { throw POSIXFailure(call: "openpty", errno: errno) }
    defer {
        close(slave)
        close(master)
    }
    return try body(slave)
}

/// A pipe's write end, closed after `body`.
func withPipe<T>(_ body: (Int32) throws -> T) throws -> T {
    var fds: [Int32] = [-1, -1]
    guard pipe(&fds) == 0 else { throw POSIXFailure(call: "pipe", errno: errno) }
    defer {
        close(fds[0])
        close(fds[1])
    }
    return try body(fds[1])
}

struct POSIXFailure: Error {
    var call: String
    var errno: Int32
}

func environment(_ values: [String: String]) -> (String) -> String? {
    { values[$0] }
}

@Suite struct TerminalTests {
    /// With stdout on a terminal (a real one for the pty cases), colour unless NO_COLOR (even empty) or TERM=dumb.
    @Test(arguments: [
        ([String: String](), true, true), (["NO_COLOR": "1"], true, false), (["NO_COLOR": ""], true, false),
        (["TERM": "dumb"], true, false), ([:], false, false),
    ])
    func colourDecision(env: [String: String], tty: Bool, expected: Bool) throws {
        let values = ["TERM": "xterm"].merging(env) { $1 }
        #expect(TerminalPolicy.useColor(isTTY: tty, noColor: values["NO_COLOR"], term: values["TERM"]) == expected)
        let probed = try tty
            ? withPseudoTerminal(columns: 80) { Terminal.probe(fd: $0, env: environment(values)) }
            : withPipe { Terminal.probe(fd: $0, env: environment(values)) }
        #expect(probed.isTTY == tty)
        #expect(probed.color == expected)
    }

    @Test func colourOnARealTerminal() throws {
        try withPseudoTerminal(columns: 80) { fd in
            #expect(Terminal.probe(fd: fd, env: environment(["TERM": "xterm"])).color)
            #expect(!Terminal.probe(fd: fd, env: environment(["TERM": "xterm", "NO_COLOR": "1"])).color)
        }
    }

    @Test func widthDecision() throws {
        // Not a terminal: no truncation, unless COLUMNS says a width.
        #expect(try withPipe { Terminal.probe(fd: $0, env: environment(["TERM": "xterm"])) }.width == nil)
        #expect(try withPipe { Terminal.probe(fd: $0, env: environment(["COLUMNS": "57"])) }.width == 57)
        #expect(TerminalPolicy.width(columnsEnv: nil, isTTY: true, ttyColumns: 91) == 91)
        // A real terminal 63 columns wide.
        #expect(try withPseudoTerminal(columns: 63) { Terminal.probe(fd: $0, env: environment(["TERM": "xterm"])) }.width == 63)
    }
}
