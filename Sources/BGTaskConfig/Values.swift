/// systemd time spans (systemd.time(7)) in microseconds.
public enum SystemdTimeSpan: Sendable {
    /// The value `infinity` parses to.
    public static let infinity: Int64 = .max

    /// Units and their length in microseconds, as systemd accepts them (case-sensitive: `m` is a minute, `M` a month).
    static let units: [String: Int64] = {
        let usec: Int64 = 1
        let msec: Int64 = 1_000
        let sec: Int64 = 1_000_000
        let minute = 60 * sec
        let hour = 60 * minute
        let day = 24 * hour
        let week = 7 * day
        let month: Int64 = 2_629_800 * sec  // 30.44 days, as systemd
        let year: Int64 = 31_557_600 * sec  // 365.25 days, as systemd
        var table: [String: Int64] = [:]
        for name in ["us", "usec", "µs", "μs"] { table[name] = usec }
        for name in ["ms", "msec"] { table[name] = msec }
        for name in ["s", "sec", "second", "seconds"] { table[name] = sec }
        for name in ["m", "min", "minute", "minutes"] { table[name] = minute }
        for name in ["h", "hr", "hour", "hours"] { table[name] = hour }
        for name in ["d", "day", "days"] { table[name] = day }
        for name in ["w", "week", "weeks"] { table[name] = week }
        for name in ["M", "month", "months"] { table[name] = month }
        for name in ["y", "year", "years"] { table[name] = year }
        return table
    }()

    /// Parses a time span such as `5` (seconds), `500ms`, `1min 30s`, `1.5s`, `2h`, `infinity`.
    ///
    /// A number without a unit is in seconds. Components add up; whitespace between a number and its unit
    /// is allowed. Returns nil for anything else, negative values and values that overflow.
    public static func parse(_ text: String) -> Int64? {
        let s = Array(trimWhitespace(Substring(text)).unicodeScalars)
        if s.isEmpty {
            return nil
        }
        if String(String.UnicodeScalarView(s)) == "infinity" {
            return infinity
        }
        var i = 0
        var total: Int64 = 0
        while true {
            while i < s.count, isBlank(s[i]) { i += 1 }
            if i == s.count { break }
            // The number: digits, optionally a fraction.
            var whole: Int64 = 0
            var wholeDigits = 0
            while i < s.count, let d = digit(s[i]) {
                guard let w = checkedMulAdd(whole, 10, d) else { return nil }
                whole = w
                wholeDigits += 1
                i += 1
            }
            var fraction: [Int64] = []
            if i < s.count, s[i] == "." {
                i += 1
                while i < s.count, let d = digit(s[i]) {
                    fraction.append(d)
                    i += 1
                }
            }
            if wholeDigits == 0 && fraction.isEmpty { return nil }
            while i < s.count, isBlank(s[i]) { i += 1 }
            // The unit: a run of letters.
            let unitStart = i
            while i < s.count, isUnitLetter(s[i]) { i += 1 }
            let unitName = String(String.UnicodeScalarView(s[unitStart..<i]))
            let multiplier: Int64
            if unitName.isEmpty {
                // "12.34.56" and "5x" are not time spans.
                if i < s.count, !isBlank(s[i]) { return nil }
                multiplier = 1_000_000
            } else {
                guard let m = units[unitName] else { return nil }
                multiplier = m
            }
            guard let part = scaled(whole: whole, fraction: fraction, by: multiplier),
                  case let (sum, overflow) = total.addingReportingOverflow(part), !overflow
            else { return nil }
            total = sum
        }
        return total
    }

    /// Formats microseconds the way systemd does (`5s`, `1min 30s`, `500ms`, `infinity`), so that the result
    /// parses back to the same value.
    public static func format(_ usec: Int64) -> String {
        if usec == infinity {
            return "infinity"
        }
        if usec <= 0 {
            return "0"
        }
        let table: [(String, Int64)] = [
            ("y", 31_557_600_000_000), ("month", 2_629_800_000_000), ("w", 604_800_000_000),
            ("d", 86_400_000_000), ("h", 3_600_000_000), ("min", 60_000_000), ("s", 1_000_000),
            ("ms", 1_000), ("us", 1),
        ]
        var rest = usec
        var parts: [String] = []
        for (name, length) in table where rest >= length {
            let n = rest / length
            rest %= length
            // Sub-second remainders of a whole second count are shown as a fraction, like systemd ("1.5s").
            if name == "s", rest > 0 {
                var frac = String(rest)
                frac = String(repeating: "0", count: 6 - frac.count) + frac
                while frac.hasSuffix("0") { frac.removeLast() }
                parts.append("\(n).\(frac)s")
                rest = 0
                break
            }
            parts.append("\(n)\(name)")
        }
        return parts.joined(separator: " ")
    }

    private static func isBlank(_ c: Unicode.Scalar) -> Bool {
        c == " " || c == "\t" || c == "\n" || c == "\r"
    }

    private static func isUnitLetter(_ c: Unicode.Scalar) -> Bool {
        (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || c == "µ" || c == "μ"
    }

    /// whole * multiplier + 0.fraction * multiplier, truncated, nil on overflow.
    private static func scaled(whole: Int64, fraction: [Int64], by multiplier: Int64) -> Int64? {
        let (base, overflow) = whole.multipliedReportingOverflow(by: multiplier)
        if overflow { return nil }
        var extra: Int64 = 0
        var unit = multiplier
        for d in fraction {
            unit /= 10
            if unit == 0 { break }
            extra += d * unit
        }
        let (sum, overflow2) = base.addingReportingOverflow(extra)
        return overflow2 ? nil : sum
    }
}

/// Byte sizes with base-1024 suffixes (`64K`, `64KiB`, `1M`, `1.5G`, `512`, `512B`).
public enum ByteSize: Sendable {
    static let suffixes: [String: Int64] = {
        var table: [String: Int64] = ["": 1, "B": 1]
        let letters = ["K", "M", "G", "T", "P", "E"]
        var factor: Int64 = 1
        for letter in letters {
            factor *= 1024
            table[letter] = factor
            table[letter + "iB"] = factor
        }
        return table
    }()

    /// Parses a size in bytes; nil if it is not one, is negative or overflows.
    public static func parse(_ text: String) -> Int64? {
        let s = trimWhitespace(Substring(text))
        let numberEnd = s.firstIndex(where: { !($0.isASCII && ($0.isNumber || $0 == ".")) }) ?? s.endIndex
        let number = s[..<numberEnd]
        let suffix = trimWhitespace(s[numberEnd...])
        guard let factor = suffixes[String(suffix)] else { return nil }
        let pieces = number.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard !number.isEmpty, pieces.count <= 2, pieces.allSatisfy({ !$0.contains(".") }),
              let whole = pieces[0].isEmpty ? 0 : Int64(pieces[0])
        else { return nil }
        let (base, overflow) = whole.multipliedReportingOverflow(by: factor)
        if overflow { return nil }
        var extra: Int64 = 0
        if pieces.count == 2 {
            guard !pieces[0].isEmpty || !pieces[1].isEmpty else { return nil }
            // Up to 18 fraction digits, in a long enough integer; the fraction of a byte is truncated.
            var numerator: Int64 = 0
            var denominator: Int64 = 1
            for c in pieces[1].prefix(9) {
                guard let d = c.wholeNumberValue else { return nil }
                numerator = numerator * 10 + Int64(d)
                denominator *= 10
            }
            let (product, overflow) = numerator.multipliedReportingOverflow(by: factor)
            extra = overflow ? (factor / denominator) * numerator : product / denominator
        }
        let (sum, overflow2) = base.addingReportingOverflow(extra)
        return overflow2 ? nil : sum
    }

    /// Formats a size in the largest unit that divides it exactly (`65536` → `64KiB`).
    public static func format(_ bytes: Int64) -> String {
        for letter in ["E", "P", "T", "G", "M", "K"] {
            if let factor = suffixes[letter], bytes >= factor, bytes % factor == 0 {
                return "\(bytes / factor)\(letter)iB"
            }
        }
        return "\(bytes)"
    }
}

/// A percentage, kept exactly as hundredths of a percent (basis points): `10%` is 1000, `12.5%` is 1250.
public struct Percentage: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Hundredths of a percent, 0...10000.
    public var basisPoints: Int

    public init(basisPoints: Int) {
        self.basisPoints = basisPoints
    }

    /// A whole percentage.
    public init(_ percent: Int) {
        self.basisPoints = percent * 100
    }

    /// The share as a fraction of 1 (`10%` → 0.1).
    public var fraction: Double { Double(basisPoints) / 10_000 }

    /// Parses `10%` or `12.5%` or `12.75%` (the `%` sign is required, like systemd), between 0% and 100%.
    public static func parse(_ text: String) -> Percentage? {
        let s = trimWhitespace(Substring(text))
        guard s.hasSuffix("%") else { return nil }
        let number = s.dropLast()
        let pieces = number.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let wholeText = pieces.first, !wholeText.isEmpty, wholeText.count <= 3,
              wholeText.allSatisfy({ $0.isASCII && $0.isNumber }), let whole = Int(wholeText)
        else { return nil }
        var hundredths = 0
        if pieces.count == 2 {
            let frac = pieces[1]
            guard !frac.isEmpty, frac.count <= 2, frac.allSatisfy({ $0.isASCII && $0.isNumber }),
                  let value = Int(frac)
            else { return nil }
            hundredths = frac.count == 1 ? value * 10 : value
        }
        let points = whole * 100 + hundredths
        guard points <= 10_000 else { return nil }
        return Percentage(basisPoints: points)
    }

    public static func < (lhs: Percentage, rhs: Percentage) -> Bool {
        lhs.basisPoints < rhs.basisPoints
    }

    /// `10%`, `12.5%`.
    public var description: String {
        let whole = basisPoints / 100
        let rest = basisPoints % 100
        if rest == 0 { return "\(whole)%" }
        if rest % 10 == 0 { return "\(whole).\(rest / 10)%" }
        return "\(whole).\(rest < 10 ? "0" : "")\(rest)%"
    }
}

/// systemd booleans: `1`/`yes`/`y`/`true`/`t`/`on` and `0`/`no`/`n`/`false`/`f`/`off`, case-insensitive.
public enum ConfigBoolean: Sendable {
    /// Parses a boolean; nil if the word is not one.
    public static func parse(_ text: String) -> Bool? {
        switch trimWhitespace(Substring(text)).lowercased() {
        case "1", "yes", "y", "true", "t", "on": true
        case "0", "no", "n", "false", "f", "off": false
        default: nil
        }
    }

    /// `yes` or `no`, as in systemd's configuration files.
    public static func format(_ value: Bool) -> String {
        value ? "yes" : "no"
    }
}

/// Parses a non-negative decimal integer without sign or spaces.
func parseDecimal(_ text: String) -> Int? {
    guard !text.isEmpty, text.count <= 18, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
    return Int(text)
}

private func digit(_ c: Unicode.Scalar) -> Int64? {
    c >= "0" && c <= "9" ? Int64(c.value - 48) : nil
}

private func checkedMulAdd(_ a: Int64, _ m: Int64, _ d: Int64) -> Int64? {
    let (p, o1) = a.multipliedReportingOverflow(by: m)
    let (s, o2) = p.addingReportingOverflow(d)
    return o1 || o2 ? nil : s
}
