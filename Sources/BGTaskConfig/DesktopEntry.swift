#if canImport(Glibc)
import Glibc
#endif

/// One file in the XDG Desktop Entry format (Desktop Entry Specification 1.5), split into groups and
/// keys, values still raw (their type depends on the key).
///
/// Rules (each has a test in `DesktopEntryTests`):
/// - `#` lines and blank lines are comments; there are no trailing comments and no line continuation;
/// - `[Group]` headers (any printable ASCII but `[`, `]`); a group name may appear only once;
/// - `Key=Value`, whitespace around `=` ignored; keys are `A-Za-z0-9-`, optionally localized
///   `Key[lang_COUNTRY.ENCODING@MODIFIER]`; a key may appear only once per group (per locale);
/// - an entry before the first group is an error; a UTF-8 BOM is ignored; lines end with LF or CR LF.
public struct DesktopEntryFile: Sendable {
    /// One `Key[locale]=value` line.
    public struct Entry: Hashable, Sendable {
        public var key: String
        /// The part in brackets of a localized key (`de`, `sr@latin`), nil for the plain key.
        public var locale: String?
        /// The value as written, surrounding whitespace removed, escapes not yet decoded.
        public var raw: String
        public var line: Int
    }

    /// One `[Group]` and its entries in file order.
    public struct Group: Sendable {
        public var name: String
        public var line: Int
        public var entries: [Entry]

        /// The entry `key` (plain, or for exactly `locale`).
        public func entry(_ key: String, locale: String? = nil) -> Entry? {
            entries.first { $0.key == key && $0.locale == locale }
        }
    }

    public var path: String
    public var groups: [Group]

    /// The group named `name`.
    public func group(_ name: String) -> Group? { groups.first { $0.name == name } }

    /// Splits `text` into groups and entries; `errors` name `path`, the line and the key.
    public static func parse(_ text: String, path: String) -> (file: DesktopEntryFile, errors: [ConfigError]) {
        var file = DesktopEntryFile(path: path, groups: [])
        var errors: [ConfigError] = []
        // Split on scalars: Swift takes CR LF for one Character.
        var lines = text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).map { String(String.UnicodeScalarView($0)) }
        if let first = lines.first, first.hasPrefix("\u{FEFF}") { lines[0] = String(first.dropFirst()) }
        for (index, rawLine) in lines.enumerated() {
            let number = index + 1
            var line = Substring(rawLine)
            if line.last == "\r" { line = line.dropLast() }
            let location = SourceLocation(file: path, line: number)
            let trimmed = trimWhitespace(line)
            if trimmed.isEmpty || trimmed.first == "#" { continue }
            if trimmed.first == "[" {
                let inner = trimmed.dropFirst().dropLast()
                guard trimmed.count >= 2, trimmed.last == "]", !inner.isEmpty,
                      inner.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value < 0x7F && $0 != "[" && $0 != "]" })
                else {
                    errors.append(ConfigError(.invalidSectionHeader(String(trimmed)), at: location))
                    continue
                }
                let name = String(inner)
                if file.groups.contains(where: { $0.name == name }) {
                    errors.append(ConfigError(.invalid("group [\(name)] appears more than once"), at: location))
                }
                file.groups.append(Group(name: name, line: number, entries: []))
                continue
            }
            guard let equals = trimmed.firstIndex(of: "=") else {
                errors.append(ConfigError(.missingEquals(String(trimmed)), at: location))
                continue
            }
            let fullKey = trimWhitespace(trimmed[..<equals])
            let value = String(trimWhitespace(trimmed[trimmed.index(after: equals)...]))
            guard let (key, locale) = splitKey(fullKey) else {
                errors.append(ConfigError(
                    .invalid("invalid key name \(quoted(String(fullKey))): expected A-Za-z0-9- and an optional [locale]"),
                    at: location, key: String(fullKey)))
                continue
            }
            guard !file.groups.isEmpty else {
                errors.append(ConfigError(.invalid("entry before the first group header"), at: location, key: String(fullKey)))
                continue
            }
            let g = file.groups.count - 1
            if file.groups[g].entry(key, locale: locale) != nil {
                errors.append(ConfigError(
                    .invalid("key appears more than once in group [\(file.groups[g].name)]"), at: location, key: String(fullKey)))
                continue
            }
            file.groups[g].entries.append(Entry(key: key, locale: locale, raw: value, line: number))
        }
        return (file, errors)
    }

    /// `Name[de_DE@euro]` → ("Name", "de_DE@euro"); nil when the key is not well formed.
    static func splitKey(_ full: Substring) -> (String, String?)? {
        var key = full
        var locale: String?
        if let open = full.firstIndex(of: "[") {
            guard full.last == "]" else { return nil }
            let inner = full[full.index(after: open)..<full.index(before: full.endIndex)]
            guard !inner.isEmpty, inner.unicodeScalars.allSatisfy({ isKeyScalar($0) || "_.@".unicodeScalars.contains($0) })
            else { return nil }
            locale = String(inner)
            key = full[..<open]
        }
        guard !key.isEmpty, key.unicodeScalars.allSatisfy(isKeyScalar) else { return nil }
        return (String(key), locale)
    }

    private static func isKeyScalar(_ s: Unicode.Scalar) -> Bool {
        (s >= "A" && s <= "Z") || (s >= "a" && s <= "z") || (s >= "0" && s <= "9") || s == "-"
    }
}
