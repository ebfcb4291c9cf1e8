import BGTaskCore

#if canImport(Glibc)
import Glibc
#endif

/// One decision as `Explain`, `GetApp`'s `lastDecision` and `Monitor` show it.
struct DecisionRecord {
    var realtimeUSec: Int64
    var app: AppID?
    var kind: DecisionKind
    var reason: Reason
    var message: String
    /// The scene whose change caused it (`BGTASKD_SCENE`); Monitor's only: the history does not keep it.
    var scene: SceneID? = nil
}

/// The most recent decisions about one app (at most `limit`), oldest first, for `Explain` and `lastDecision`.
///
/// Kept packed in one byte buffer per app: with 10,000 apps a `[Decision]` per app (each with its own
/// message string and every journal field) cost ~3 KiB per app, and the messages' text ~870 bytes per app
/// at bench row 4 (13 records each); this costs ~12 bytes per record. A message is stored as its shape
/// (``MessageShapes``: the text with the app's own identifier as the byte 0x01, each decimal number as the
/// byte 0x03, a literal 0x01, 0x02 or 0x03 as 0x02 followed by that byte) and its numbers. Each record,
/// every integer a LEB128 varint: the realtime stamp's difference from the first record's (zigzag), kind and
/// reason (one byte each, their index in `allCases`), the shape's number plus one (0: the shape follows,
/// its length then its bytes), how many numbers, the numbers.
struct DecisionHistory {
    private var bytes: [UInt8] = []
    /// The stamp the records' stamps are stored relative to.
    private var base: Int64 = 0
    /// Where the newest record starts.
    private var lastStart: Int32 = 0
    private var stored: Int32 = 0
    /// Records kept.
    var count: Int { Int(stored) }

    private static let appMark: UInt8 = 0x01
    private static let escape: UInt8 = 0x02
    private static let numberMark: UInt8 = 0x03
    /// Longest digit run stored as a number (more digits could overflow: kept as text).
    private static let maxDigits = 18
    private static let kinds = DecisionKind.allCases
    private static let reasons = Reason.allCases
    private static let kindIndex: [DecisionKind: UInt8] = Dictionary(
        uniqueKeysWithValues: kinds.enumerated().map { ($1, UInt8($0)) })
    private static let reasonIndex: [Reason: UInt8] = Dictionary(
        uniqueKeysWithValues: reasons.enumerated().map { ($1, UInt8($0)) })
    /// Whether a kind's and a reason's stored byte (the enum's one-byte case tag, which Swift gives a
    /// payload-free enum in declaration order, the order of `allCases`) is its index: checked once for
    /// every case, so the per-decision look-up hashes nothing; the dictionaries answer otherwise.
    private static let tagsAreIndices: Bool =
        kinds.enumerated().allSatisfy { tag($1) == $0 } && reasons.enumerated().allSatisfy { tag($1) == $0 }

    private static func tag<E>(_ value: E) -> Int {
        MemoryLayout<E>.size == 1 ? withUnsafeBytes(of: value) { Int($0[0]) } : -1
    }

    private static func index(_ kind: DecisionKind) -> UInt8 {
        tagsAreIndices ? UInt8(truncatingIfNeeded: tag(kind)) : kindIndex[kind] ?? 0
    }

    private static func index(_ reason: Reason) -> UInt8 {
        tagsAreIndices ? UInt8(truncatingIfNeeded: tag(reason)) : reasonIndex[reason] ?? 0
    }

    init() {
        precondition(Self.kinds.count <= 256 && Self.reasons.count <= 256, "decision kinds and reasons fit a byte")
    }

    /// Room for a message's shape and numbers, reused from one append to the next (the daemon keeps one).
    struct Scratch {
        var shape: [UInt8] = []
        var numbers: [UInt64] = []
    }

    /// Appends a decision about `app`, dropping the oldest records beyond `limit`.
    mutating func append(realtimeUSec: Int64, kind: DecisionKind, reason: Reason, message: String, app: AppID, limit: Int) {
        var scratch = Scratch()
        append(realtimeUSec: realtimeUSec, kind: kind, reason: reason, message: message, app: app, limit: limit, scratch: &scratch)
    }

    /// The same, splitting the message in `scratch`'s arrays (no allocation per decision once they have room).
    mutating func append(
        realtimeUSec: Int64, kind: DecisionKind, reason: Reason, message: String, app: AppID, limit: Int,
        scratch: inout Scratch
    ) {
        var message = message
        var id = app.rawValue
        scratch.shape.removeAll(keepingCapacity: true)
        scratch.numbers.removeAll(keepingCapacity: true)
        message.withUTF8 { text in
            id.withUTF8 { id in Self.split(text, app: id, shape: &scratch.shape, numbers: &scratch.numbers) }
        }
        let shape = scratch.shape, numbers = scratch.numbers
        let shapeNumber = MessageShapes.shared.number(of: shape)
        if stored == 0 { base = realtimeUSec }
        let worst = bytes.count + 10 + 2 + 10 + (shapeNumber == nil ? 10 + shape.count : 0) + 10 * (numbers.count + 1)
        if bytes.capacity < worst {
            // Grow by a quarter, not double: ten thousand apps' buffers are a large part of the daemon's heap.
            bytes.reserveCapacity(max(worst, bytes.count + bytes.count / 4 + 16))
        }
        let start = bytes.count
        let delta = realtimeUSec &- base
        Self.put(UInt64(bitPattern: (delta << 1) ^ (delta >> 63)), into: &bytes)
        bytes.append(Self.index(kind))
        bytes.append(Self.index(reason))
        if let shapeNumber {
            Self.put(UInt64(shapeNumber + 1), into: &bytes)
        } else {
            Self.put(0, into: &bytes)
            Self.put(UInt64(shape.count), into: &bytes)
            bytes.append(contentsOf: shape)
        }
        Self.put(UInt64(numbers.count), into: &bytes)
        for n in numbers { Self.put(n, into: &bytes) }
        lastStart = Int32(truncatingIfNeeded: start)
        stored += 1
        if stored > max(1, limit) {
            let first = end(at: 0)
            bytes.removeSubrange(0..<first)
            lastStart -= Int32(truncatingIfNeeded: first)
            stored -= 1
        }
    }

    /// Every record kept, oldest first.
    func records(app: AppID) -> [DecisionRecord] {
        var out: [DecisionRecord] = []
        out.reserveCapacity(count)
        var offset = 0
        while offset < bytes.count {
            let r = read(at: offset)
            out.append(r.record(app))
            offset = r.end
        }
        return out
    }

    /// The newest record.
    func last(app: AppID) -> DecisionRecord? {
        stored == 0 ? nil : read(at: Int(lastStart)).record(app)
    }

    /// Bytes held (the buffer's capacity), for the memory probe.
    var capacity: Int { bytes.capacity }

    private struct Stored {
        var realtimeUSec: Int64
        var kind: DecisionKind
        var reason: Reason
        var shape: [UInt8]
        var numbers: [UInt64]
        var end: Int

        func record(_ app: AppID) -> DecisionRecord {
            DecisionRecord(
                realtimeUSec: realtimeUSec, app: app, kind: kind, reason: reason,
                message: DecisionHistory.render(shape, numbers: numbers, app: app))
        }
    }

    /// Where the record at `offset` ends: `read(at:).end` without making its arrays (the oldest record is
    /// dropped on every append once the history is full).
    private func end(at offset: Int) -> Int {
        var i = offset
        _ = Self.take(bytes, &i)
        i += 2
        if Self.take(bytes, &i) == 0 {
            let length = Int(Self.take(bytes, &i))
            i += length
        }
        let n = Int(Self.take(bytes, &i))
        for _ in 0..<n { _ = Self.take(bytes, &i) }
        return i
    }

    private func read(at offset: Int) -> Stored {
        var i = offset
        let zigzag = Self.take(bytes, &i)
        let delta = Int64(bitPattern: zigzag >> 1) ^ -Int64(bitPattern: zigzag & 1)
        let kind = Self.kinds[Int(bytes[i])]
        let reason = Self.reasons[Int(bytes[i + 1])]
        i += 2
        var shape: [UInt8]
        let shapeRef = Self.take(bytes, &i)
        if shapeRef > 0 {
            shape = MessageShapes.shared.shape(Int(shapeRef - 1))
        } else {
            let length = Int(Self.take(bytes, &i))
            shape = Array(bytes[i..<i + length])
            i += length
        }
        let n = Int(Self.take(bytes, &i))
        var numbers: [UInt64] = []
        numbers.reserveCapacity(n)
        for _ in 0..<n { numbers.append(Self.take(bytes, &i)) }
        return Stored(realtimeUSec: base &+ delta, kind: kind, reason: reason, shape: shape, numbers: numbers, end: i)
    }

    private static func put(_ value: UInt64, into out: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    private static func take(_ bytes: [UInt8], _ i: inout Int) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while i < bytes.count {
            let byte = bytes[i]
            i += 1
            if shift < 64 { value |= UInt64(byte & 0x7F) << shift }
            if byte < 0x80 { break }
            shift += 7
        }
        return value
    }

    /// The message's shape (the app's identifier, numbers and the marks escaped, see above) and its numbers.
    private static func split(
        _ text: UnsafeBufferPointer<UInt8>, app id: UnsafeBufferPointer<UInt8>, shape: inout [UInt8], numbers: inout [UInt64]
    ) {
        shape.reserveCapacity(text.count)
        // Plain text between the marks is copied a run at a time (byte by byte, the appends were ~1,300
        // instructions a decision: callgrind).
        var run = 0
        func copyRun(to end: Int) {
            if end > run { shape.append(contentsOf: UnsafeBufferPointer(rebasing: text[run..<end])) }
        }
        var i = 0
        while i < text.count {
            let byte = text[i]
            if !id.isEmpty, let idStart = id.baseAddress, byte == idStart[0], i + id.count <= text.count,
                memcmp(text.baseAddress! + i, idStart, id.count) == 0
            {
                copyRun(to: i)
                shape.append(appMark)
                i += id.count
                run = i
                continue
            }
            if isDigit(byte) {
                var j = i
                var value: UInt64 = 0
                while j < text.count, isDigit(text[j]) {
                    if j - i < maxDigits { value = value * 10 + UInt64(text[j] - 0x30) }
                    j += 1
                }
                // A number written another way ("007", or too long to hold) stays text.
                if j - i <= maxDigits, byte != 0x30 || j - i == 1 {
                    copyRun(to: i)
                    shape.append(numberMark)
                    numbers.append(value)
                    run = j
                }
                i = j
                continue
            }
            if byte == appMark || byte == escape || byte == numberMark {
                copyRun(to: i)
                shape.append(escape)
                run = i  // the mark itself goes with the next run
            }
            i += 1
        }
        copyRun(to: text.count)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    /// The message of a shape and its numbers.
    fileprivate static func render(_ shape: [UInt8], numbers: [UInt64], app: AppID) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(shape.count + 64)
        var next = 0
        var i = 0
        while i < shape.count {
            let byte = shape[i]
            if byte == appMark {
                out.append(contentsOf: app.rawValue.utf8)
            } else if byte == numberMark {
                if next < numbers.count { out.append(contentsOf: String(numbers[next]).utf8) }
                next += 1
            } else if byte == escape, i + 1 < shape.count {
                i += 1
                out.append(shape[i])
            } else {
                out.append(byte)
            }
            i += 1
        }
        return String(decoding: out, as: UTF8.self)
    }
}
