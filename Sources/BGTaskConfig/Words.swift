/// Splitting of values into words the way systemd splits `ExecStart=` and `Environment=`
/// (systemd.syntax(7) "Quoting", `extract_first_word()` with unquoting and C unescaping).
public enum ConfigWords: Sendable {
    /// Splits `text` at unquoted whitespace.
    ///
    /// - Double and single quotes group characters, including whitespace, into one word; they may start
    ///   or end in the middle of a word (`a"b c"d` is `ab cd`) and are removed.
    /// - C-style escapes work inside and outside quotes: `\a \b \f \n \r \t \v \\ \" \' \s` (space),
    ///   `\ ` (a space that does not split), `\;`, `\xNN`, `\NNN` (octal), `\uNNNN`, `\UNNNNNNNN`.
    /// - `""` is an empty word.
    ///
    /// Throws `.invalidQuoting` for an unterminated quote, an unknown escape, or an escape producing NUL.
    public static func split(_ text: String) throws(ConfigError.Kind) -> [String] {
        let s = Array(text.unicodeScalars)
        var words: [String] = []
        var current = String.UnicodeScalarView()
        var inWord = false
        var quote: Unicode.Scalar?
        var i = 0
        while i < s.count {
            let c = s[i]
            if c == "\\" {
                i += 1
                guard i < s.count else {
                    throw .invalidQuoting("trailing backslash")
                }
                let (scalar, used) = try unescape(s, at: i)
                current.append(scalar)
                i += used
                inWord = true
                continue
            }
            if let q = quote {
                if c == q {
                    quote = nil
                } else {
                    current.append(c)
                }
                i += 1
                continue
            }
            if c == "\"" || c == "'" {
                quote = c
                inWord = true
            } else if c == " " || c == "\t" || c == "\n" || c == "\r" {
                if inWord {
                    words.append(String(current))
                    current = String.UnicodeScalarView()
                    inWord = false
                }
            } else {
                current.append(c)
                inWord = true
            }
            i += 1
        }
        if let q = quote {
            throw .invalidQuoting("unterminated \(q == "\"" ? "double" : "single") quote")
        }
        if inWord {
            words.append(String(current))
        }
        return words
    }

    /// Decodes the escape whose first character (after the backslash) is at `s[i]`; returns the scalar and
    /// how many scalars it used.
    private static func unescape(_ s: [Unicode.Scalar], at i: Int) throws(ConfigError.Kind) -> (Unicode.Scalar, Int) {
        let c = s[i]
        switch c {
        case "a": return ("\u{07}", 1)
        case "b": return ("\u{08}", 1)
        case "f": return ("\u{0C}", 1)
        case "n": return ("\n", 1)
        case "r": return ("\r", 1)
        case "t": return ("\t", 1)
        case "v": return ("\u{0B}", 1)
        case "\\", "\"", "'", ";", " ": return (c, 1)
        case "s": return (" ", 1)
        case "x": return try number(s, from: i + 1, digits: 2, radix: 16, escape: "\\x")
        case "u": return try number(s, from: i + 1, digits: 4, radix: 16, escape: "\\u")
        case "U": return try number(s, from: i + 1, digits: 8, radix: 16, escape: "\\U")
        case "0"..."7":
            let (scalar, used) = try number(s, from: i, digits: 3, radix: 8, escape: "\\")
            return (scalar, used - 1)
        default:
            throw .invalidQuoting("invalid escape sequence \"\\\(Character(c))\"")
        }
    }

    private static func number(
        _ s: [Unicode.Scalar], from start: Int, digits: Int, radix: UInt32, escape: String
    ) throws(ConfigError.Kind) -> (Unicode.Scalar, Int) {
        var value: UInt32 = 0
        for k in 0..<digits {
            guard start + k < s.count,
                  let d = Character(s[start + k]).hexDigitValue, UInt32(d) < radix
            else {
                throw .invalidQuoting("invalid escape sequence \"\(escape)\", expected \(digits) digits")
            }
            value = value * radix + UInt32(d)
        }
        // Octal escapes make single bytes: only ASCII can stand alone in UTF-8 text.
        guard value != 0, radix != 8 || value < 0x80, let scalar = Unicode.Scalar(value) else {
            throw .invalidQuoting("escape sequence \"\(escape)\" does not make a valid character")
        }
        return (scalar, digits + 1)
    }
}
