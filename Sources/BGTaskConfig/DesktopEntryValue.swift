#if canImport(Glibc)
import Glibc
#endif

/// Decoding of Desktop Entry values and of the `Exec=` command line.
public enum DesktopEntryValue: Sendable {
    /// A `string`/`localestring` value: `\s` space, `\n` newline, `\t` tab, `\r` return, `\\` backslash;
    /// any other escape (or a trailing backslash) is an error. `\;` is allowed only in lists.
    public static func string(_ raw: String) throws(ConfigError.Kind) -> String {
        try decode(raw, list: false).first ?? ""
    }

    /// A list value: elements separated by `;` (a trailing `;` is optional), `\;` a literal semicolon,
    /// each element decoded like a string. Empty elements are dropped.
    public static func list(_ raw: String) throws(ConfigError.Kind) -> [String] {
        try decode(raw, list: true).filter { !$0.isEmpty }
    }

    /// A `boolean`: `true` or `false` (and the deprecated `1`/`0`).
    public static func boolean(_ raw: String) throws(ConfigError.Kind) -> Bool {
        switch raw {
        case "true", "1": return true
        case "false", "0": return false
        default: throw .invalidBoolean(raw)
        }
    }

    private static func decode(_ raw: String, list: Bool) throws(ConfigError.Kind) -> [String] {
        var out: [String] = []
        var current = String.UnicodeScalarView()
        var it = raw.unicodeScalars.makeIterator()
        while let c = it.next() {
            if c == "\\" {
                guard let e = it.next() else { throw .invalid("value ends in a lone backslash") }
                switch e {
                case "s": current.append(" ")
                case "n": current.append("\n")
                case "t": current.append("\t")
                case "r": current.append("\r")
                case "\\": current.append("\\")
                case ";" where list: current.append(";")
                default: throw .invalid("invalid escape sequence \\\(e)")
                }
            } else if c == ";" && list {
                out.append(String(current))
                current = String.UnicodeScalarView()
            } else {
                current.append(c)
            }
        }
        if !list || !current.isEmpty { out.append(String(current)) }
        return out
    }

    /// Field codes removed from `Exec=`: bgtaskd launches an app with no files or URLs, and `%i`, `%c`,
    /// `%k` (icon, name, location) are for the launcher's own use; the deprecated ones are ignored.
    static let removedFieldCodes: Set<Unicode.Scalar> = ["f", "F", "u", "U", "i", "c", "k", "d", "D", "n", "N", "v", "m"]

    /// Splits a decoded `Exec=` value into arguments as the Desktop Entry Specification says:
    /// - arguments are separated by spaces; an argument (or part of one) in double quotes keeps its
    ///   spaces, and inside quotes `\"`, `` \` ``, `\$` and `\\` stand for `"`, `` ` ``, `$`, `\`
    ///   (any other backslash inside quotes is an error); outside quotes a backslash escapes the next
    ///   character, as in the shell;
    /// - field codes: `%%` is `%`; `%f %F %u %U %i %c %k` (and the deprecated `%d %D %n %N %v %m`) are
    ///   removed, and an argument that was only field codes disappears; any other `%x`, or a `%` at the
    ///   end, is an error;
    /// - an unterminated quote is an error; the result has at least one argument.
    public static func execArguments(_ decoded: String) throws(ConfigError.Kind) -> [String] {
        var words: [String] = []
        var current = String.UnicodeScalarView()
        var inWord = false
        var onlyFieldCodes = true
        var scalars = Array(decoded.unicodeScalars)
        scalars.append(" ")
        var i = 0
        var inQuotes = false
        func endWord() {
            if inWord && !(current.isEmpty && onlyFieldCodes) { words.append(String(current)) }
            current = String.UnicodeScalarView()
            inWord = false
            onlyFieldCodes = true
        }
        while i < scalars.count {
            let c = scalars[i]
            i += 1
            if c == "%" {
                guard i < scalars.count - 1 else { throw .invalid("Exec= ends in a lone %") }
                let code = scalars[i]
                i += 1
                inWord = true
                if code == "%" {
                    current.append("%")
                    onlyFieldCodes = false
                } else if !removedFieldCodes.contains(code) {
                    throw .invalid("invalid field code %\(code) in Exec=")
                }
                continue
            }
            if inQuotes {
                if c == "\"" {
                    inQuotes = false
                } else if c == "\\" {
                    guard i < scalars.count - 1, "\"`$\\".unicodeScalars.contains(scalars[i]) else {
                        throw .invalidQuoting("invalid escape inside quotes in Exec=: only \\\", \\`, \\$ and \\\\ are allowed")
                    }
                    current.append(scalars[i])
                    i += 1
                } else {
                    current.append(c)
                }
                continue
            }
            switch c {
            case " ", "\t", "\n":
                endWord()
            case "\"":
                inQuotes = true
                inWord = true
                onlyFieldCodes = false
            case "\\":
                guard i < scalars.count - 1 else { throw .invalidQuoting("Exec= ends in a lone backslash") }
                current.append(scalars[i])
                i += 1
                inWord = true
                onlyFieldCodes = false
            default:
                current.append(c)
                inWord = true
                onlyFieldCodes = false
            }
        }
        if inQuotes { throw .invalidQuoting("unterminated quote in Exec=") }
        guard let program = words.first, !program.isEmpty else { throw .invalid("no command given") }
        guard program.hasPrefix("/") || !program.contains("/") else {
            throw .invalid("executable must be an absolute path or a bare name to look up in PATH: \(quoted(program))")
        }
        return words
    }
}
