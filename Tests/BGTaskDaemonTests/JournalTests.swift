import Dispatch
import Foundation
import Synchronization
import Testing
@testable import BGTaskDaemon

@Suite struct JournalFieldTests {
    @Test(arguments: ["MESSAGE", "BGTASKD_APP", "OBJECT_PID", "A", "X1_2", String(repeating: "A", count: 64)])
    func acceptsValidNames(name: String) {
        #expect(JournalField(name, "v") != nil)
    }

    @Test(arguments: ["", "_PID", "1ABC", "bgtaskd_app", "BGTASKD-APP", "BGTASKD APP", "É", String(repeating: "A", count: 65)])
    func rejectsNamesJournaldWouldDrop(name: String) {
        #expect(JournalField(name, "v") == nil)
    }
}

/// The writer's entry buffer: what `sd_journal_sendv` is handed is exactly `NAME=value` per field.
@Suite struct JournalEntryFieldsTests {
    @Test func numbersAreWrittenInDecimalAsStringWouldWriteThem() {
        var entry = JournalEntryFields()
        entry.add("A", 0)
        entry.add("B", -1)
        entry.add("C", Int64.min)
        entry.add("D", Int64.max)
        entry.add("E", UInt64.max)
        entry.add("F", Int32.min)
        entry.add("G", UInt32(4_000_000_000))
        entry.add("H", 10)
        entry.add("I", 1_000_000_007)
        let values: [String] = ["0", "-1", String(Int64.min), String(Int64.max), String(UInt64.max), String(Int32.min),
                                "4000000000", "10", "1000000007"]
        #expect(entry.fields.map(\.value) == values)
        #expect(entry.fields.map(\.name) == ["A", "B", "C", "D", "E", "F", "G", "H", "I"])
    }

    @Test func aNilValueWritesNoField() {
        var entry = JournalEntryFields()
        entry.add("BGTASKD_APP", nil as String?)
        entry.add("BGTASKD_PID", nil as Int32?)
        entry.add("BGTASKD_REASON", "no-assertions")
        #expect(entry.count == 1)
        #expect(entry.fields.first?.name == "BGTASKD_REASON")
        #expect(entry.fields.first?.value == "no-assertions")
    }

    @Test func valuesKeepEveryByteAndSplitAtTheFirstEquals() throws {
        var entry = JournalEntryFields()
        entry.add("BGTASKD_MULTILINE", "line one\nline two = with équals")
        entry.add("EMPTY", "")
        entry.add(try #require(JournalField("BGTASKD_CHECKED", "a=b")))
        #expect(entry.fields.map(\.value) == ["line one\nline two = with équals", "", "a=b"])
        #expect(entry.fields.map(\.name) == ["BGTASKD_MULTILINE", "EMPTY", "BGTASKD_CHECKED"])
        entry.withField(1) { #expect(Array($0) == Array("EMPTY=".utf8)) }
    }

    /// Far past the first room (1 KiB, 32 fields): every field intact; an entry past 64 KiB does not keep
    /// its room, and the buffer is whole for the next entry.
    @Test func itGrowsPastItsRoomAndGivesBackAnOversizedOne() {
        var entry = JournalEntryFields()
        let long = String(repeating: "x", count: 100_000)
        for i in 0..<300 { entry.add("F", i) }
        let grown = entry.byteCapacity
        #expect(grown > JournalEntryFields.initialBytes)
        entry.removeAll()
        #expect(entry.byteCapacity == grown, "an ordinary entry keeps its room")
        for i in 0..<300 { entry.add("F", i) }
        entry.add("LONG", long)
        #expect(entry.count == 301)
        #expect(entry.fields.prefix(300).map(\.value) == (0..<300).map(String.init))
        #expect(entry.fields.last?.value == long)
        entry.removeAll()
        #expect(entry.count == 0 && entry.byteCount == 0)
        #expect(entry.byteCapacity == JournalEntryFields.initialBytes, "a 100 KB entry gives its room back")
        entry.add("AFTER", "small")
        #expect(entry.fields.map(\.value) == ["small"])
    }
}

/// Writes through the real sink into the real journald and reads it back with journalctl.
@Suite(.serialized) struct JournalRoundTripTests {
    /// Runs journalctl and returns what it printed.
    static func journalctl(_ args: [String]) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/journalctl")
        p.arguments = args
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    /// `--since` `seconds` (epoch) and `--file` of the journal files written since then (less two minutes:
    /// a file's mtime can lag its last write) and of those being written (no `@` in the name): journalctl
    /// over the whole of a shared journal (up to 4 GiB of /run) took 24–42 s here read cold, even with
    /// `--since`, as it opens every file (IntegrationTests/integration/support.py `journal_scope`, alike).
    static func scope(since seconds: Int) -> [String] {
        var files: [String] = []
        for dir in ["/run/log/journal", "/var/log/journal"] {
            for machine in (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] {
                let path = dir + "/" + machine
                for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] where name.hasSuffix(".journal") {
                    let file = path + "/" + name
                    let modified = (try? FileManager.default.attributesOfItem(atPath: file)[.modificationDate] as? Date)
                        .map { $0.timeIntervalSince1970 } ?? 0
                    if !name.contains("@") || modified >= Double(seconds - 120) { files.append(file) }
                }
            }
        }
        return ["--since=@\(seconds)"] + files.sorted().map { "--file=" + $0 }
    }

    /// True when a datagram connect to journald's socket succeeds: a socket file left behind by a killed
    /// journald exists but refuses the connection, and everything sent to it would be lost.
    static func journaldAnswers() -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let path = Array("/run/systemd/journal/socket".utf8CString)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            raw.copyBytes(from: path.map { UInt8(bitPattern: $0) })
        }
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
    }

    @Test func entryReadBackWithEveryField() throws {
        try #require(
            Self.journaldAnswers(),
            "no journald answers on /run/systemd/journal/socket: run `make test` (scripts/ensure-journald.sh starts one)")
        let sink = JournalSink(identifier: "bgtaskd-test", destination: .journal)
        let marker = UUID().uuidString.replacingOccurrences(of: "-", with: "")
        // The read-back opens only the journal files written since a second before the entry (`scope`).
        let scope = Self.scope(since: Int(Date().timeIntervalSince1970) - 1)
        let fields = [
            JournalField("BGTASKD_TEST_MARKER", marker)!,
            JournalField("BGTASKD_DECISION", "suspend")!,
            JournalField("BGTASKD_REASON", "no-assertions")!,
            JournalField("BGTASKD_APP", "org.example.Mail")!,
            JournalField("BGTASKD_REMAINING_USEC", "29999999")!,
            JournalField("MESSAGE_ID", MessageIDs.byDecision["suspend"]!)!,
            JournalField("BGTASKD_MULTILINE", "line one\nline two = with equals")!,
        ]
        let line = #line + 1
        sink.send("Suspended org.example.Mail: no assertions", priority: .notice, fields: fields)
        sink.flush()
        #expect(sink.sent == 1)
        #expect(sink.dropped == 0)

        // `journalctl --sync` returns once journald has written everything it received: no polling.
        _ = try Self.journalctl(["--sync"])
        let text = try Self.journalctl(["-o", "json", "--no-pager"] + scope + ["BGTASKD_TEST_MARKER=\(marker)"])
        let entry = try text.split(separator: "\n").first.flatMap {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let e = try #require(entry, "entry never appeared in the journal")
        #expect(e["MESSAGE"] as? String == "Suspended org.example.Mail: no assertions")
        #expect(e["PRIORITY"] as? String == "5")
        #expect(e["SYSLOG_IDENTIFIER"] as? String == "bgtaskd-test")
        #expect(e["BGTASKD_DECISION"] as? String == "suspend")
        #expect(e["BGTASKD_REASON"] as? String == "no-assertions")
        #expect(e["BGTASKD_APP"] as? String == "org.example.Mail")
        #expect(e["BGTASKD_REMAINING_USEC"] as? String == "29999999")
        #expect(e["MESSAGE_ID"] as? String == MessageIDs.byDecision["suspend"])
        #expect(e["BGTASKD_MULTILINE"] as? String == "line one\nline two = with equals")
        #expect(e["CODE_LINE"] as? String == String(line))
        #expect((e["CODE_FILE"] as? String)?.hasSuffix("JournalTests.swift") == true)
        #expect(e["_PID"] as? String == String(getpid()))
    }

    /// The form the daemon uses for decisions: the writer writes the fields (numbers in place, nils left out).
    @Test func fieldsWrittenByTheWriterReadBack() throws {
        try #require(Self.journaldAnswers(), "no journald answers on /run/systemd/journal/socket")
        let sink = JournalSink(identifier: "bgtaskd-test", destination: .journal)
        let marker = UUID().uuidString.replacingOccurrences(of: "-", with: "")
        let scope = Self.scope(since: Int(Date().timeIntervalSince1970) - 1)
        sink.send("granted background task 7 to org.example.Mail", priority: .info) { fields in
            fields.add("BGTASKD_TEST_MARKER", marker)
            fields.add("BGTASKD_TASK_ID", UInt64(7))
            fields.add("BGTASKD_REMAINING_USEC", Int64(29_999_999))
            fields.add("BGTASKD_PEER_PID", Int32(-1))
            fields.add("BGTASKD_SCENE", nil as String?)
            fields.add("BGTASKD_UID", nil as UInt32?)
        }
        sink.flush()
        #expect(sink.sent == 1)
        _ = try Self.journalctl(["--sync"])
        let text = try Self.journalctl(["-o", "json", "--no-pager"] + scope + ["BGTASKD_TEST_MARKER=\(marker)"])
        let e = try #require(try text.split(separator: "\n").first.flatMap {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }, "entry never appeared in the journal")
        #expect(e["MESSAGE"] as? String == "granted background task 7 to org.example.Mail")
        #expect(e["PRIORITY"] as? String == "6")
        #expect(e["BGTASKD_TASK_ID"] as? String == "7")
        #expect(e["BGTASKD_REMAINING_USEC"] as? String == "29999999")
        #expect(e["BGTASKD_PEER_PID"] as? String == "-1")
        #expect(e["BGTASKD_SCENE"] == nil && e["BGTASKD_UID"] == nil)
        #expect((e["CODE_FUNC"] as? String)?.hasPrefix("fieldsWrittenByTheWriterReadBack") == true)
    }

    @Test func congestionIsSignalledAtThreeQuartersAndReliefAtAQuarter() throws {
        try #require(Self.journaldAnswers(), "no journald answers on /run/systemd/journal/socket")
        let sink = JournalSink(identifier: "bgtaskd-test", destination: .journal, capacity: 8)
        let events = Mutex<[String]>([])
        sink.onCongestion({ events.withLock { $0.append("congested") } },
                          relieved: { events.withLock { $0.append("relieved") } })
        sink.holdWakeups()  // nothing is written until released: the queue only fills
        for i in 0..<5 { sink.send("entry \(i)") }
        #expect(events.withLock { $0 } == [])
        #expect(!sink.isCongested)
        sink.send("entry 5")  // 6 of 8: three quarters
        #expect(events.withLock { $0 } == ["congested"])
        #expect(sink.isCongested)
        sink.send("entry 6")
        sink.send("entry 7")
        sink.send("entry 8")  // the ninth does not fit
        #expect(sink.dropped == 1)
        #expect(events.withLock { $0 } == ["congested"], "signalled once per congestion")
        sink.flush()
        #expect(sink.sent == 8)
        #expect(events.withLock { $0 } == ["congested", "relieved"])
        #expect(!sink.isCongested)
    }

    /// journald behind the writer: 8,000 entries released at once usually fill its socket's queue
    /// (`net.unix.max_dgram_qlen` datagrams: 512 under systemd, 10 without), and a send waits for room; the
    /// writer goes on as journald takes them, and the 1,000 entries sent meanwhile follow: all 9,000 are in
    /// the journal, once each, in order. Whether the machine's journald falls behind depends on its pace,
    /// so a wait is not required here; `test_journal.py`'s
    /// `test_a_writer_that_waited_for_journald_keeps_order` stops a journald of its own to make the wait
    /// certain and checks the same order.
    @Test func aBurstBeyondJournaldsQueueIsJournaledOnceInOrder() throws {
        try #require(Self.journaldAnswers(), "no journald answers on /run/systemd/journal/socket")
        let sink = JournalSink(identifier: "bgtaskd-test", destination: .journal, capacity: 16384)
        let marker = UUID().uuidString.replacingOccurrences(of: "-", with: "")
        let since = Int(Date().timeIntervalSince1970) - 1
        let first = 8000, total = 9000
        func entry(_ i: Int) {
            sink.send("burst test \(i)", fields: [JournalField("BGTASKD_TEST_MARKER", marker)!,
                                                  JournalField("BGTASKD_TEST_SEQ", String(i))!])
        }
        let allSent = DispatchSemaphore(value: 0)
        sink.onBatchWritten { [weak sink] in if sink?.sent == total { allSent.signal() } }
        sink.holdWakeups()
        for i in 0..<first { entry(i) }
        sink.releaseWakeups()
        for i in first..<total { entry(i) }
        _ = allSent.wait(timeout: .now() + 60)
        #expect(sink.sent == total)
        #expect(sink.dropped == 0)
        #expect(sink.waits <= total)

        _ = try Self.journalctl(["--sync"])
        // The files listed after the entries are in: 9,000 of them can make journald rotate its file (the
        // part written before is then in a renamed file, which a list taken before would miss).
        let scope = Self.scope(since: since)
        let text = try Self.journalctl(["-o", "json", "--no-pager", "--output-fields=BGTASKD_TEST_SEQ"] + scope
                                       + ["BGTASKD_TEST_MARKER=\(marker)"])
        let seqs = text.split(separator: "\n").compactMap { line -> Int? in
            guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            return (o["BGTASKD_TEST_SEQ"] as? String).flatMap { Int($0) }
        }
        #expect(seqs.count == total, "\(seqs.count) entries read back")
        let firstOutOfPlace = zip(seqs, 0..<total).first { $0.0 != $0.1 }
        #expect(firstOutOfPlace == nil, "entry \(firstOutOfPlace?.0 ?? -1) read back where \(firstOutOfPlace?.1 ?? -1) was due")
    }

    /// The writer writes until its queue is empty: entries sent while it writes (here, from its own thread
    /// after each batch, so surely while it writes) are written in the same run, with no wake-up of their
    /// own; once the queue is empty the next entry wakes it again.
    @Test func entriesSentWhileTheWriterWritesWakeNobody() throws {
        try #require(Self.journaldAnswers(), "no journald answers on /run/systemd/journal/socket")
        let sink = JournalSink(identifier: "bgtaskd-test", destination: .journal)
        let marker = UUID().uuidString.replacingOccurrences(of: "-", with: "")
        let total = 50
        let done = DispatchSemaphore(value: 0)
        sink.onBatchWritten { [weak sink] in
            guard let sink else { return }
            if sink.sent < total {
                sink.send("writer run \(sink.sent)", fields: [JournalField("BGTASKD_TEST_MARKER", marker)!])
            } else {
                done.signal()
            }
        }
        sink.send("writer run 0", fields: [JournalField("BGTASKD_TEST_MARKER", marker)!])
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(sink.sent == total)
        #expect(sink.wakeups == 1, "\(sink.wakeups) wake-ups for \(total) entries sent while the writer wrote")
        sink.onBatchWritten {}
        // The run ends once the writer finds its queue empty, which may come after `done` (signalled from
        // its last batch): an entry sent before that is still taken in the same run. `flush` waits for the
        // run to end (the writer's queue is serial), so that the next entry finds the writer stopped.
        sink.flush()
        #expect(sink.wakeups == 1)
        sink.send("after the run", fields: [JournalField("BGTASKD_TEST_MARKER", marker)!])
        sink.flush()
        #expect(sink.wakeups == 2 && sink.sent == total + 1)
    }

    @Test func fullQueueDropsAndCounts() {
        // capacity 0: everything is dropped, nothing blocks.
        let sink = JournalSink(identifier: "bgtaskd-test", destination: .stderr, capacity: 0)
        for _ in 0..<100 { sink.send("dropped") }
        sink.flush()
        #expect(sink.dropped == 100)
        #expect(sink.sent == 0)
    }
}

@Suite struct CatalogTests {
    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func everyDecisionHasAnIDInTheCatalogAndTheList() throws {
        let catalog = try String(contentsOf: Self.repo.appendingPathComponent("systemd/bgtaskd.catalog"), encoding: .utf8)
        let list = try String(contentsOf: Self.repo.appendingPathComponent("systemd/message-ids.txt"), encoding: .utf8)
        let decisions = ["launch", "foreground", "background", "suspend", "resume", "terminate", "grant", "deny",
                         "end", "expire", "run-task", "complete-task", "notify", "policy", "coalesced"]
        #expect(Set(MessageIDs.byDecision.keys) == Set(decisions))
        #expect(Set(MessageIDs.byDecision.values).count == decisions.count, "MESSAGE_IDs must be distinct")
        for d in decisions {
            let id = try #require(MessageIDs.byDecision[d])
            #expect(id.count == 32 && id.allSatisfy(\.isHexDigit))
            #expect(catalog.contains("-- \(id)"), "catalog lacks \(d) \(id)")
            #expect(list.contains("\(d) \(id)"), "message-ids.txt lacks \(d) \(id)")
        }
        // The denial budget's notice is not a decision, but `journalctl -x` explains it too.
        let paused = MessageIDs.connectionsPaused
        #expect(paused.count == 32 && paused.allSatisfy(\.isHexDigit))
        #expect(!MessageIDs.byDecision.values.contains(paused))
        #expect(catalog.contains("-- \(paused)"), "catalog lacks connections-paused \(paused)")
        #expect(list.contains("connections-paused \(paused)"), "message-ids.txt lacks connections-paused")
        // SPEC §14: system sleep off (no system bus, no logind), said once.
        let off = MessageIDs.systemSleepOff
        #expect(off.count == 32 && off.allSatisfy(\.isHexDigit) && off != paused)
        #expect(!MessageIDs.byDecision.values.contains(off))
        #expect(catalog.contains("-- \(off)"), "catalog lacks system-sleep-off \(off)")
        #expect(list.contains("system-sleep-off \(off)"), "message-ids.txt lacks system-sleep-off")
    }
}
