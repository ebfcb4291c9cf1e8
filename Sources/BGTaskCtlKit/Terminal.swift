#if canImport(Glibc)
import Glibc
#endif

/// The facts about an output and the environment that the pure formatters are handed.
package struct Terminal: Sendable, Equatable {
    package var isTTY: Bool
    package var color: Bool
    package var width: Int?

    package init(isTTY: Bool, color: Bool, width: Int?) {
        self.isTTY = isTTY
        self.color = color
        self.width = width
    }

    /// Reads `fd`'s terminal state (isatty, TIOCGWINSZ) once, and the environment through `env`.
    package static func probe(fd: Int32, env: (String) -> String?) -> Terminal {
        let tty = isatty(fd) == 1
        return Terminal(
            isTTY: tty,
            color: TerminalPolicy.useColor(isTTY: tty, noColor: env("NO_COLOR"), term: env("TERM")),
            width: TerminalPolicy.width(columnsEnv: env("COLUMNS"), isTTY: tty, ttyColumns: tty ? columns(fd: fd) : nil)
        )
    }

    /// The terminal's width in columns, if `fd` is a terminal that knows it.
    package static func columns(fd: Int32) -> Int? {
        var ws = winsize()
        guard ioctl(fd, UInt(TIOCGWINSZ), &ws) == 0, ws.ws_col > 0 else { return nil }
        return Int(ws.ws_col)
    }
}
