import BGTaskCtlKit

#if canImport(Glibc)
import Glibc
#endif

extension Terminal {
    /// Reads stdout's terminal state and the environment once.
    static func current() -> Terminal { probe(fd: 1, env: env) }

    static func env(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}

/// Unbuffered writes to stdout and stderr (no stdio buffer to flush before exec, fork or exit).
enum Output {
    static func out(_ text: String) { write(fd: 1, text) }
    static func line(_ text: String = "") { write(fd: 1, text + "\n") }
    static func lines(_ lines: [String]) {
        guard !lines.isEmpty else { return }
        write(fd: 1, lines.joined(separator: "\n") + "\n")
    }
    static func err(_ text: String) { write(fd: 2, text + "\n") }

    private static func write(fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress.map { $0 + off }, $0.count - off) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            off += n
        }
    }
}

/// Local wall-clock times for decisions (`realtimeUSec`, `__REALTIME_TIMESTAMP`).
enum LocalTime {
    /// `Jan 02 15:04:05`, like journalctl's short format; with `millis`, `15:04:05.123`.
    static func format(realtimeUSec: Int64, millis: Bool = false) -> String {
        var t = time_t(realtimeUSec / 1_000_000)
        var tm = tm()
        guard localtime_r(&t, &tm) != nil else { return String(realtimeUSec) }
        var buf = [CChar](repeating: 0, count: 64)
        let n = strftime(&buf, buf.count, millis ? "%H:%M:%S" : "%b %d %H:%M:%S", &tm)
        var text = String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if millis {
            let ms = (realtimeUSec % 1_000_000) / 1_000
            text += "." + (ms < 10 ? "00" : ms < 100 ? "0" : "") + String(ms)
        }
        return text
    }
}

/// The name of a user id, if the system knows it.
func userName(uid: Int64) -> String? {
    guard let id = uid_t(exactly: uid) else { return nil }
    var pwd = passwd()
    var result: UnsafeMutablePointer<passwd>?
    var buf = [CChar](repeating: 0, count: 4096)
    guard getpwuid_r(id, &pwd, &buf, buf.count, &result) == 0, result != nil, let name = pwd.pw_name else { return nil }
    return String(cString: name)
}
