import BGTaskCore
import BGTaskLaunch
import Dispatch
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// A unit name of systemd's desktop convention (https://systemd.io/DESKTOP_ENVIRONMENTS/), decoded:
/// `app[-<launcher>]-<app-id>@<random>.service` (also without `@<random>`) and
/// `app[-<launcher>]-<app-id>-<random>.scope`.
///
/// The mapping, exactly:
/// 1. the name must start with `app-` and end in `.service` or `.scope`; both are dropped;
/// 2. `.service`: everything from the last `@` on is the instance (random) and is dropped;
///    `.scope`: everything from the last `-` on is the random part and is dropped (a scope without one
///    is no app unit);
/// 3. what is left is split at the literal `-`: systemd escapes a dash inside a part as `\x2d`, so
///    the launcher part and a well-behaved app ID contain none; each part is unescaped (`\xNN` → byte);
/// 4. one part: it is the app ID (no launcher). Several parts: first the parts after the first, joined
///    with `-`, are tried as the app ID (the first part is the launcher: `gnome`, `flatpak`, `kde`…; this
///    also covers launchers that do not escape dashes in the ID), then all parts joined (an app ID with
///    an unescaped dash and no launcher). The first candidate that is a known app wins.
struct AppUnitName: Equatable, Sendable {
    var launcher: String?
    /// App IDs to try, in order.
    var candidates: [String]

    static func parse(_ name: String) -> AppUnitName? {
        guard name.hasPrefix("app-") else { return nil }
        var body: Substring
        if name.hasSuffix(".service") {
            body = name.dropFirst(4).dropLast(".service".count)
            if let at = body.lastIndex(of: "@") { body = body[..<at] }
        } else if name.hasSuffix(".scope") {
            body = name.dropFirst(4).dropLast(".scope".count)
            guard let dash = body.lastIndex(of: "-") else { return nil }
            body = body[..<dash]
        } else {
            return nil
        }
        let parts = body.split(separator: "-", omittingEmptySubsequences: false).map { unescape($0) }
        guard !parts.contains(where: \.isEmpty) else { return nil }
        if parts.count == 1 { return AppUnitName(launcher: nil, candidates: parts) }
        return AppUnitName(launcher: parts[0], candidates: [parts.dropFirst().joined(separator: "-"), parts.joined(separator: "-")])
    }

    /// systemd's unit-name escaping: `\xNN` is the byte NN; anything else stays.
    static func unescape(_ s: Substring) -> String {
        let bytes = Array(s.utf8)
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "\\"), i + 3 < bytes.count, bytes[i + 1] == UInt8(ascii: "x"),
               let hi = hex(bytes[i + 2]), let lo = hex(bytes[i + 3])
            {
                out.append(hi << 4 | lo)
                i += 4
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hex(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): b - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): b - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): b - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
