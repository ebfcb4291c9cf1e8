import CSystemd
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One journal field. Names are checked because journald silently drops fields it does not accept.
public struct JournalField: Sendable, Equatable {
    public let name: String
    public let value: String

    /// nil when journald would drop the name: it must be 1–64 characters of A–Z, 0–9 and `_`,
    /// and not start with `_` (trusted fields) or a digit.
    public init?(_ name: String, _ value: String) {
        guard JournalField.isValidName(name) else { return nil }
        self.name = name
        self.value = value
    }

    public static func isValidName(_ name: String) -> Bool {
        let u = Array(name.utf8)
        guard !u.isEmpty, u.count <= 64 else { return false }
        if u[0] == UInt8(ascii: "_") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(u[0]) { return false }
        return u.allSatisfy {
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                || $0 == UInt8(ascii: "_")
        }
    }
}

/// syslog priorities as journald's PRIORITY field takes them.
public enum JournalPriority: Int, Sendable {
    case error = 3, warning = 4, notice = 5, info = 6, debug = 7
}

/// Writes entries to journald with `sd_journal_sendv`, or to stderr when there is no journal.
///
/// Sending never blocks the caller: entries go to a queue of their own, bounded by `capacity`;
/// a stalled journald fills it and further entries are dropped and counted, rather than stalling
/// the daemon's state queue (journald's datagram socket blocks the sender when its queue is full).
public final class JournalSink: Sendable {
    public enum Destination: Sendable, Equatable { case journal, stderr }

    public let destination: Destination
    public let identifier: String
    private let queue = DispatchQueue(label: "bgtaskd.journal", qos: .utility)
    private let capacity: Int
    private let pending = Atomic<Int>(0)
    private let droppedCount = Atomic<Int>(0)
    private let sentCount = Atomic<Int>(0)

    /// `destination` nil: the journal when its socket exists, else stderr.
    public init(identifier: String = "bgtaskd", destination: Destination? = nil, capacity: Int = 4096) {
        self.identifier = identifier
        self.capacity = capacity
        if let destination {
            self.destination = destination
        } else {
            self.destination = access("/run/systemd/journal/socket", F_OK) == 0 ? .journal : .stderr
        }
    }

    /// Entries dropped because the queue was full.
    public var dropped: Int { droppedCount.load(ordering: .relaxed) }
    /// Entries written.
    public var sent: Int { sentCount.load(ordering: .relaxed) }

    /// Queues one entry. `fields` must not repeat MESSAGE, PRIORITY, SYSLOG_IDENTIFIER or CODE_*.
    public func send(
        _ message: String, priority: JournalPriority = .info, fields: [JournalField] = [],
        file: String = #fileID, line: Int = #line, function: String = #function
    ) {
        if pending.add(1, ordering: .relaxed).newValue > capacity {
            pending.subtract(1, ordering: .relaxed)
            droppedCount.add(1, ordering: .relaxed)
            return
        }
        let destination = self.destination
        let identifier = self.identifier
        queue.async { [self] in
            switch destination {
            case .journal:
                var all: [String] = [
                    "MESSAGE=" + message, "PRIORITY=\(priority.rawValue)", "SYSLOG_IDENTIFIER=" + identifier,
                    "CODE_FILE=" + file, "CODE_LINE=\(line)", "CODE_FUNC=" + function,
                ]
                all.reserveCapacity(all.count + fields.count)
                for f in fields { all.append(f.name + "=" + f.value) }
                if JournalSink.sendv(all) < 0 {
                    // The journal went away: keep the line rather than lose it.
                    JournalSink.writeStderr(identifier: identifier, message: message, fields: fields)
                }
            case .stderr:
                JournalSink.writeStderr(identifier: identifier, message: message, fields: fields)
            }
            sentCount.add(1, ordering: .relaxed)
            pending.subtract(1, ordering: .relaxed)
        }
    }

    /// Waits until every queued entry was written (tests, shutdown).
    public func flush() {
        queue.sync {}
    }

    private static func sendv(_ fields: [String]) -> Int32 {
        // Each field is copied once into one buffer; iovecs point into it.
        var bytes: [UInt8] = []
        var ranges: [(Int, Int)] = []
        ranges.reserveCapacity(fields.count)
        for f in fields {
            let start = bytes.count
            bytes.append(contentsOf: f.utf8)
            ranges.append((start, bytes.count - start))
        }
        return bytes.withUnsafeMutableBytes { raw -> Int32 in
            guard let base = raw.baseAddress else { return -1 }
            var iov = ranges.map { iovec(iov_base: base + $0.0, iov_len: $0.1) }
            return sd_journal_sendv(&iov, Int32(iov.count))
        }
    }

    private static func writeStderr(identifier: String, message: String, fields: [JournalField]) {
        var line = identifier + ": " + message
        let extra = fields.filter { $0.name.hasPrefix("BGTASKD_") }
        if !extra.isEmpty {
            line += " [" + extra.map { "\($0.name)=\($0.value)" }.joined(separator: " ") + "]"
        }
        line += "\n"
        var bytes = Array(line.utf8)
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress! + off, $0.count - off) }
            if n <= 0 { break }
            off += n
        }
        bytes.removeAll()
    }
}
