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

    /// For names written in the source (the daemon's own fields): checked in debug builds only. A literal
    /// is an immortal `String`, made without a copy or an allocation (a `StaticString`'s `description` copied
    /// each name, and allocated for those over 15 bytes: 11 per decision journaled, callgrind).
    init(knownName name: String, _ value: String) {
        assert(JournalField.isValidName(name), "invalid journal field name \(name)")
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
/// Sending never blocks the caller: entries go to a queue of their own, written in order. Two classes
/// share it (issue 11, SPEC §11):
/// - *essential* entries (decisions that change an app's state or deny it something, and the journal
///   budget's summaries) are never dropped. Past `essentialCapacity * 3 / 4` of them waiting, the sink
///   reports congestion and ``mustHoldClients`` stays true until they have drained to a quarter: the
///   daemon then stops reading clients for as long as it takes, so what clients cause cannot grow the
///   queue further, and what the daemon decides on its own (deadlines) is bounded by its apps.
/// - *detail* entries (grants and ends within the budget, notifications, ordinary logs) are bounded by
///   `capacity`; a stalled journald fills it and further ones are dropped and counted, rather than
///   stalling the daemon's state queue (journald's datagram socket blocks the sender when its queue is full).
///
/// Entries are handed over in batches: the writer is woken `batchWindow` after the first entry of a
/// batch arrives, and writes everything queued by then and whatever comes while it writes, until the queue
/// is empty — under load it is woken once for a long run of entries. Between `holdWakeups()` and
/// `releaseWakeups()` (one turn of the daemon's queue) it is not woken at all, so that the turn's replies
/// leave before a second thread competes for the CPU with them. When journald falls behind, a send waits
/// in `sendmsg` for room in journald's socket, as a program journaling inline would (`waits` counts them).
public final class JournalSink: Sendable {
    public enum Destination: Sendable, Equatable { case journal, stderr }

    struct Entry: Sendable {
        var message: String
        var priority: JournalPriority
        var fields: [JournalField]
        /// Fields written by the writer rather than the sender (formatting costs the daemon's queue nothing).
        var writeFields: (@Sendable (inout JournalEntryFields) -> Void)?
        var file: String
        var line: Int
        var function: String
        var essential = false
    }

    struct Batch {
        var entries: [Entry] = []
        /// The writer's timer is armed or the writer is writing: a new entry wakes nobody (the writer takes
        /// it before it stops).
        var writerBusy = false
        var holding = false
    }

    public let destination: Destination
    public let identifier: String
    /// Default QoS, like every queue of the daemon: libdispatch gives a worker thread the nice value of
    /// each QoS it runs, and taking a thread back from .utility to default would need CAP_SYS_NICE
    /// (under systemd it logged "Failed to set thread priority … errno=13").
    private let queue = DispatchQueue(label: "bgtaskd.journal")
    private let capacity: Int
    private let essentialCapacity: Int
    private let batch = Mutex(Batch())
    /// Wakes the writer `batchWindow` after a batch's first entry (a timerfd: arming it wakes nobody).
    private let batchTimer: QuietTimer
    /// Detail entries queued or being written.
    private let pending = Atomic<Int>(0)
    /// Essential entries queued or being written.
    private let pendingEssential = Atomic<Int>(0)
    private let essentialCount = Atomic<Int>(0)
    /// Between essential entries crossing `essentialHighWater` and falling back to `essentialLowWater`.
    private let holdingClients = Atomic<Bool>(false)
    private let droppedCount = Atomic<Int>(0)
    private let waitCount = Atomic<Int>(0)
    private let wakeCount = Atomic<Int>(0)
    private let batchWritten = Mutex<(@Sendable () -> Void)?>(nil)
    /// The writer's entry, kept between entries (used on `queue` only).
    private final class Scratch: @unchecked Sendable {
        #if !DEBUG
        @exclusivity(unchecked)
        #endif
        var entry = JournalEntryFields()
        /// The writer's batch: an empty array with room, swapped for the queue's.
        var taken: [Entry] = []
    }
    private let scratch = Scratch()
    private let sentCount = Atomic<Int>(0)
    /// Between crossing `highWater` and falling back to `lowWater`.
    private let congested = Atomic<Bool>(false)
    private let congestionHandlers = Mutex<(congested: @Sendable () -> Void, relieved: @Sendable () -> Void)?>(nil)
    private var highWater: Int { max(1, capacity * 3 / 4) }
    private var lowWater: Int { capacity / 4 }
    private var essentialHighWater: Int { max(1, essentialCapacity * 3 / 4) }
    private var essentialLowWater: Int { essentialCapacity / 4 }

    /// `destination` nil: the journal when its socket exists, else stderr.
    public init(identifier: String = "bgtaskd", destination: Destination? = nil, capacity: Int = 4096,
                essentialCapacity: Int = 16384)
    {
        self.identifier = identifier
        self.capacity = capacity
        self.essentialCapacity = essentialCapacity
        batchTimer = QuietTimer(queue: queue, window: Self.batchWindow)
        if let destination {
            self.destination = destination
        } else {
            self.destination = access("/run/systemd/journal/socket", F_OK) == 0 ? .journal : .stderr
        }
        batchTimer.start { [weak self] in self?.writeBatch() }
    }

    /// Flow control: `congested` runs (on the sending thread) when the queue fills to three quarters,
    /// `relieved` (on the writer's queue) once it has drained to a quarter. The daemon stops reading
    /// its clients in between, so that a burst of calls waits for journald instead of losing the
    /// decisions' entries (SPEC §11: every decision is one entry); only what the daemon decides on its
    /// own meanwhile (deadlines) can still fill the last quarter.
    public func onCongestion(_ congested: @escaping @Sendable () -> Void, relieved: @escaping @Sendable () -> Void) {
        congestionHandlers.withLock { $0 = (congested, relieved) }
    }

    /// True while the queue is congested (see `onCongestion`).
    public var isCongested: Bool { congested.load(ordering: .relaxed) }

    /// True while more essential entries wait than the sink lets clients add to: the daemon must not
    /// serve clients (however long journald stalls) until this is false again.
    public var mustHoldClients: Bool { holdingClients.load(ordering: .relaxed) }

    /// Essential entries waiting to be written.
    public var essentialPending: Int { pendingEssential.load(ordering: .relaxed) }
    /// Essential entries queued so far (never dropped).
    public var essentialQueued: Int { essentialCount.load(ordering: .relaxed) }

    /// Detail entries dropped because the queue was full (essential entries never are).
    public var dropped: Int { droppedCount.load(ordering: .relaxed) }
    /// Entries written.
    public var sent: Int { sentCount.load(ordering: .relaxed) }

    /// Queues one entry. `fields` must not repeat MESSAGE, PRIORITY, SYSLOG_IDENTIFIER or CODE_*.
    public func send(
        _ message: String, priority: JournalPriority = .info, fields: [JournalField] = [], essential: Bool = false,
        file: String = #fileID, line: Int = #line, function: String = #function
    ) {
        enqueue(Entry(message: message, priority: priority, fields: fields, file: file, line: line, function: function,
                      essential: essential))
    }

    /// Queues one entry whose fields `writeFields` writes on the writer's queue, off the caller's, after
    /// MESSAGE, PRIORITY, SYSLOG_IDENTIFIER and CODE_* (which it must not repeat).
    public func send(
        _ message: String, priority: JournalPriority = .info, essential: Bool = false,
        file: String = #fileID, line: Int = #line, function: String = #function,
        fields writeFields: @escaping @Sendable (inout JournalEntryFields) -> Void
    ) {
        enqueue(Entry(message: message, priority: priority, fields: [], writeFields: writeFields, file: file, line: line,
                      function: function, essential: essential))
    }

    private func enqueue(_ entry: Entry) {
        let full: Bool
        if entry.essential {
            essentialCount.add(1, ordering: .relaxed)
            full = pendingEssential.add(1, ordering: .relaxed).newValue >= essentialHighWater
            if full { holdingClients.store(true, ordering: .relaxed) }
        } else {
            let count = pending.add(1, ordering: .relaxed).newValue
            if count > capacity {
                pending.subtract(1, ordering: .relaxed)
                droppedCount.add(1, ordering: .relaxed)
                return
            }
            full = count >= highWater
        }
        if full, congested.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged {
            congestionHandlers.withLock { $0 }?.congested()
        }
        let wake = batch.withLock { b -> Bool in
            b.entries.append(entry)
            guard !b.writerBusy, !b.holding else { return false }
            b.writerBusy = true
            return true
        }
        if wake { wakeWriter() }
    }

    /// Until `releaseWakeups()`, queued entries wait without waking the writer.
    public func holdWakeups() {
        batch.withLock { $0.holding = true }
    }

    /// Wakes the writer if entries were queued while holding.
    public func releaseWakeups() {
        let wake = batch.withLock { b -> Bool in
            b.holding = false
            guard !b.writerBusy, !b.entries.isEmpty else { return false }
            b.writerBusy = true
            return true
        }
        if wake { wakeWriter() }
    }

    /// The writer runs `batchWindow` after the first entry of a batch: under load it takes many
    /// entries per wake-up (each wake-up is a thread switch competing with the daemon's replies, and
    /// each entry still costs journald its own work), idle it wakes once per burst and never otherwise.
    static let batchWindow: DispatchTimeInterval = .microseconds(500)

    private func wakeWriter() {
        wakeCount.add(1, ordering: .relaxed)
        batchTimer.arm()
    }

    /// Times the writer was woken (its timer armed): entries sent while it writes wake nobody.
    var wakeups: Int { wakeCount.load(ordering: .relaxed) }

    /// A send that took longer than this may have waited for journald: its socket's queue full
    /// (`net.unix.max_dgram_qlen` datagrams), the send slept until journald took one. A send with room is a
    /// few µs. Only a slow send that also slept (the thread's voluntary context switches went up) counts as a
    /// wait: on a slow machine, or traced, or preempted, a send takes longer without waiting.
    static let waitedUSec: Int64 = 25

    /// Waits until every queued entry was written (tests, shutdown).
    public func flush() {
        releaseWakeups()
        queue.sync { writeBatch(measuring: false) }
    }

    /// Sends that waited for room in journald's queue: a send that took longer than `waitedUSec` and slept.
    public var waits: Int { waitCount.load(ordering: .relaxed) }

    /// Writes what is queued, and what comes meanwhile, until nothing is left: under load the writer stays
    /// here, and stops once the queue is empty — the next entry wakes it again after `batchWindow`. A send
    /// that finds journald's queue full waits in `sendmsg` until journald takes a datagram, and the writer
    /// goes on at once: as fast as journald takes entries, with journald's queue never left empty while
    /// entries wait (in `make bench` row 2b this answered 13% more calls than pausing after such a send and
    /// coming back on a timer, which cost two thread wake-ups a pause: docs/design.md).
    private func writeBatch(measuring: Bool = true) {
        var sleeps = measuring ? Self.voluntarySwitches() : 0
        while true {
            // The queue's array and the writer's empty one change places: no array made per batch.
            var entries = scratch.taken
            scratch.taken = []
            batch.withLock { b in
                swap(&entries, &b.entries)
                // Empty: the writer stops, and the next entry wakes it (with the same lock held, no entry
                // can come between the look and the flag).
                if entries.isEmpty { b.writerBusy = false }
            }
            defer {
                entries.removeAll(keepingCapacity: true)
                scratch.taken = entries
            }
            if entries.isEmpty { return }
            for e in entries {
                let start = measuring ? Monotonic.nowUSec() : 0
                writeEntry(e)
                written(e)
                guard measuring, Monotonic.nowUSec() - start > Self.waitedUSec else { continue }
                let now = Self.voluntarySwitches()
                if now > sleeps { waitCount.add(1, ordering: .relaxed) }
                sleeps = now
            }
            batchWritten.withLock { $0 }?()
        }
    }

    /// Runs on the writer after each batch it wrote to the end (not one it paused in): tests wait on it
    /// rather than polling `sent`.
    func onBatchWritten(_ body: @escaping @Sendable () -> Void) {
        batchWritten.withLock { $0 = body }
    }

    /// The calling thread's voluntary context switches so far (each time it slept).
    static func voluntarySwitches() -> Int {
        var usage = rusage()
        // RUSAGE_THREAD (Linux, 1): Glibc's module does not export it without _GNU_SOURCE.
        guard getrusage(__rusage_who_t(1), &usage) == 0 else { return 0 }
        return usage.ru_nvcsw
    }

    /// Counts one entry written, and relieves the congestion it may end.
    private func written(_ e: Entry) {
        sentCount.add(1, ordering: .relaxed)
        let left: Int, essentialLeft: Int
        if e.essential {
            essentialLeft = pendingEssential.subtract(1, ordering: .relaxed).newValue
            left = pending.load(ordering: .relaxed)
            if essentialLeft <= essentialLowWater { holdingClients.store(false, ordering: .relaxed) }
        } else {
            left = pending.subtract(1, ordering: .relaxed).newValue
            essentialLeft = pendingEssential.load(ordering: .relaxed)
        }
        if left <= lowWater, essentialLeft <= essentialLowWater,
            congested.compareExchange(expected: true, desired: false, ordering: .relaxed).exchanged
        {
            congestionHandlers.withLock { $0 }?.relieved()
        }
    }

    private func writeEntry(_ e: Entry) {
        scratch.entry.removeAll()
        JournalSink.lay(e, identifier: identifier, into: &scratch.entry)
        switch destination {
        case .journal:
            if scratch.entry.send() < 0 {
                // The journal went away: keep the line rather than lose it.
                JournalSink.writeStderr(identifier: identifier, message: e.message, entry: scratch.entry)
            }
        case .stderr:
            JournalSink.writeStderr(identifier: identifier, message: e.message, entry: scratch.entry)
        }
    }

    /// The fields every entry has, first (`headerFields` of them), then the sender's.
    static func lay(_ e: Entry, identifier: String, into entry: inout JournalEntryFields) {
        entry.add("MESSAGE", e.message)
        entry.add("PRIORITY", e.priority.rawValue)
        entry.add("SYSLOG_IDENTIFIER", identifier)
        entry.add("CODE_FILE", e.file)
        entry.add("CODE_LINE", e.line)
        entry.add("CODE_FUNC", e.function)
        for f in e.fields { entry.add(f) }
        e.writeFields?(&entry)
    }

    /// MESSAGE, PRIORITY, SYSLOG_IDENTIFIER, CODE_FILE, CODE_LINE, CODE_FUNC.
    static let headerFields = 6

    /// `identifier: message [BGTASKD_…=… …]`: the sender's own fields that are the daemon's.
    private static func writeStderr(identifier: String, message: String, entry: borrowing JournalEntryFields) {
        var line = identifier + ": " + message
        let extra = (headerFields..<max(headerFields, entry.count)).map { entry.field($0) }.filter { $0.name.hasPrefix("BGTASKD_") }
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
