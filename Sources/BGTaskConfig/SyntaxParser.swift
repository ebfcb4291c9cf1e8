/// One `Key=Value` line of a systemd-style file, after comment removal and line continuation.
public struct ConfigAssignment: Hashable, Sendable {
    /// The section the assignment appears in, without brackets (empty before the first header).
    public var section: String
    /// The key, with surrounding whitespace removed.
    public var key: String
    /// The value, with surrounding whitespace removed. Quotes are not interpreted here.
    public var value: String
    /// Where the assignment starts.
    public var location: SourceLocation

    public init(section: String, key: String, value: String, location: SourceLocation) {
        self.section = section
        self.key = key
        self.value = value
        self.location = location
    }
}

/// A `[Section]` header line.
public struct ConfigSectionHeader: Hashable, Sendable {
    /// The section name without brackets.
    public var name: String
    /// Where the header is.
    public var location: SourceLocation
}

/// The lines of one file in the syntax of systemd.syntax(7), not yet interpreted.
public struct ParsedConfigFile: Sendable {
    /// The file's path.
    public var file: String
    /// Every assignment in file order.
    public var assignments: [ConfigAssignment]
    /// Every section header in file order (a section may appear more than once).
    public var sections: [ConfigSectionHeader]
    /// Syntax errors (invalid headers, lines without `=`).
    public var errors: [ConfigError]

    /// Splits `text` into sections and assignments following systemd.syntax(7):
    ///
    /// - `[Section]` headers; `Key=Value` assignments with whitespace around the key and the value trimmed;
    /// - lines whose first non-blank character is `#` or `;` are comments (there are no trailing comments);
    /// - a line ending in an unescaped backslash continues on the next line: the backslash becomes a space
    ///   and the next line is appended; comment lines inside a continuation are skipped, and an empty line
    ///   ends it;
    /// - a UTF-8 byte order mark at the start is ignored; lines end with LF or CR LF.
    ///
    /// Quotes and escapes inside values are left alone: their meaning depends on the key.
    public static func parse(_ text: String, file: String) -> ParsedConfigFile {
        var result = ParsedConfigFile(file: file, assignments: [], sections: [], errors: [])
        var section = ""
        var continuation: String?
        var continuationStart = 0

        var lines = splitLines(text)
        if let first = lines.first, first.hasPrefix("\u{FEFF}") {
            lines[0] = String(first.dropFirst())
        }
        // A file ending in a backslash still has its last assignment; one more empty line ends it.
        lines.append("")

        for (index, raw) in lines.enumerated() {
            let number = index + 1
            let stripped = trimWhitespace(Substring(raw))
            if let first = stripped.first, first == "#" || first == ";" {
                continue
            }
            let joined: String
            let start: Int
            if let pending = continuation {
                joined = pending + raw
                start = continuationStart
            } else {
                joined = raw
                start = number
            }
            if endsWithUnescapedBackslash(joined) {
                continuation = String(joined.dropLast()) + " "
                continuationStart = start
                continue
            }
            continuation = nil
            result.parseLine(joined, line: start, section: &section)
        }
        return result
    }

    private mutating func parseLine(_ rawLine: String, line: Int, section: inout String) {
        let text = trimWhitespace(Substring(rawLine))
        if text.isEmpty {
            return
        }
        let location = SourceLocation(file: file, line: line)
        if text.first == "[" {
            let inner = text.dropFirst().dropLast()
            guard text.count >= 2, text.last == "]", !inner.isEmpty,
                  !inner.contains("["), !inner.contains("]")
            else {
                errors.append(ConfigError(.invalidSectionHeader(String(text)), at: location))
                return
            }
            section = String(inner)
            sections.append(ConfigSectionHeader(name: section, location: location))
            return
        }
        guard let equals = text.firstIndex(of: "=") else {
            errors.append(ConfigError(.missingEquals(String(text)), at: location))
            return
        }
        let key = trimWhitespace(text[..<equals])
        guard !key.isEmpty else {
            errors.append(ConfigError(.missingKeyName, at: location))
            return
        }
        let value = trimWhitespace(text[text.index(after: equals)...])
        assignments.append(ConfigAssignment(section: section, key: String(key), value: String(value), location: location))
    }
}

/// systemd's WHITESPACE: space, tab, newline, carriage return.
func isWhitespace(_ c: Character) -> Bool {
    c == " " || c == "\t" || c == "\n" || c == "\r" || c == "\r\n"
}

func trimWhitespace(_ s: Substring) -> Substring {
    // issue 15: on the UTF-8 bytes when the bytes beside what is trimmed are ASCII: a whitespace byte then
    // forms a Character of its own (only CR LF joins, both whitespace), so the result is the Character-wise
    // one below, without grapheme breaking. A space before a combining mark (one Character, not
    // whitespace) or after a prepended mark takes the Character-wise path.
    let u = s.utf8
    var lo = u.startIndex
    var hi = u.endIndex
    while lo < hi, isWhitespaceByte(u[lo]) { lo = u.index(after: lo) }
    while hi > lo, isWhitespaceByte(u[u.index(before: hi)]) { hi = u.index(before: hi) }
    let leftASCII = lo == u.startIndex || lo == hi || u[lo] < 0x80
    let rightASCII = hi == u.endIndex || hi == lo || u[u.index(before: hi)] < 0x80
    if leftASCII && rightASCII { return s[lo..<hi] }
    return trimWhitespaceByCharacter(s)
}

private func isWhitespaceByte(_ b: UInt8) -> Bool {
    b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D
}

private func trimWhitespaceByCharacter(_ s: Substring) -> Substring {
    var s = s
    while let first = s.first, isWhitespace(first) { s.removeFirst() }
    while let last = s.last, isWhitespace(last) { s.removeLast() }
    return s
}

/// Splits at LF, dropping a CR before it. On the UTF-8 bytes: LF and CR are single bytes that never occur
/// inside another scalar's encoding, so this is the scalar-wise split it replaces, without building each
/// line one scalar at a time (issue 15: that was most of the parser's time at start-up).
private func splitLines(_ text: String) -> [String] {
    var lines: [String] = []
    var text = text
    text.withUTF8 { bytes in
        var start = 0
        var i = 0
        func line(_ from: Int, _ to: Int) -> String {
            var end = to
            if end > from && bytes[end - 1] == 0x0D { end -= 1 }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[from..<end]), as: UTF8.self)
        }
        while i < bytes.count {
            if bytes[i] == 0x0A {
                lines.append(line(start, i))
                start = i + 1
            }
            i += 1
        }
        if start < bytes.count {
            lines.append(line(start, bytes.count))
        }
    }
    return lines
}

/// Whether the line ends in a backslash that is not itself escaped (`\\` at the end is a literal backslash).
private func endsWithUnescapedBackslash(_ line: String) -> Bool {
    var escaped = false
    for scalar in line.unicodeScalars {
        if escaped {
            escaped = false
        } else if scalar == "\\" {
            escaped = true
        }
    }
    return escaped
}
