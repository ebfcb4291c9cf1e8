import BGTaskCore

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
/// message string and every journal field) cost ~3 KiB per app; this costs about the message text.
/// Each record: realtime stamp (8 bytes, little-endian), kind and reason (one byte each, their index in
/// `allCases`), the stored message's length (4 bytes), the message. In the message, the app's own identifier is stored as
/// the byte 0x01 and a literal 0x01 or 0x02 as 0x02 followed by that byte.
struct DecisionHistory {
    private var bytes: [UInt8] = []
    /// Where the newest record starts.
    private var lastOffset = 0
    /// Records kept.
    private(set) var count = 0

    private static let header = 14
    private static let appMark: UInt8 = 0x01
    private static let escape: UInt8 = 0x02
    private static let kinds = DecisionKind.allCases
    private static let reasons = Reason.allCases
    private static let kindIndex: [DecisionKind: UInt8] = Dictionary(
        uniqueKeysWithValues: kinds.enumerated().map { ($1, UInt8($0)) })
    private static let reasonIndex: [Reason: UInt8] = Dictionary(
        uniqueKeysWithValues: reasons.enumerated().map { ($1, UInt8($0)) })

    init() {
        precondition(Self.kinds.count <= 256 && Self.reasons.count <= 256, "decision kinds and reasons fit a byte")
    }

    /// Appends a decision about `app`, dropping the oldest records beyond `limit`.
    mutating func append(realtimeUSec: Int64, kind: DecisionKind, reason: Reason, message: String, app: AppID, limit: Int) {
        var message = message
        var id = app.rawValue
        let needed = bytes.count + Self.header + message.utf8.count
        if bytes.capacity < needed {
            // Grow by a quarter, not double: ten thousand apps' buffers are most of the daemon's heap.
            bytes.reserveCapacity(max(needed + 64, needed + needed / 4))
        }
        let start = bytes.count
        withUnsafeBytes(of: realtimeUSec.littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(Self.kindIndex[kind] ?? 0)
        bytes.append(Self.reasonIndex[reason] ?? 0)
        bytes.append(contentsOf: [0, 0, 0, 0] as [UInt8])
        message.withUTF8 { text in id.withUTF8 { id in Self.encode(text, app: id, into: &bytes) } }
        let length = UInt32(truncatingIfNeeded: bytes.count - start - Self.header)
        for i in 0..<4 { bytes[start + 10 + i] = UInt8(truncatingIfNeeded: length >> (8 * UInt32(i))) }
        lastOffset = start
        count += 1
        if count > max(1, limit) {
            let first = Self.header + recordLength(at: 0)
            bytes.removeSubrange(0..<first)
            lastOffset -= first
            count -= 1
        }
    }

    /// Every record kept, oldest first.
    func records(app: AppID) -> [DecisionRecord] {
        var out: [DecisionRecord] = []
        out.reserveCapacity(count)
        var offset = 0
        while offset < bytes.count {
            out.append(record(at: offset, app: app))
            offset += Self.header + recordLength(at: offset)
        }
        return out
    }

    /// The newest record.
    func last(app: AppID) -> DecisionRecord? {
        count == 0 ? nil : record(at: lastOffset, app: app)
    }

    private func recordLength(at offset: Int) -> Int {
        var length = 0
        for i in 0..<4 { length |= Int(bytes[offset + 10 + i]) << (8 * i) }
        return length
    }

    private func record(at offset: Int, app: AppID) -> DecisionRecord {
        var stamp: UInt64 = 0
        for i in 0..<8 { stamp |= UInt64(bytes[offset + i]) << (8 * UInt64(i)) }
        let start = offset + Self.header
        let message = Self.decode(bytes[start..<start + recordLength(at: offset)], app: app)
        return DecisionRecord(
            realtimeUSec: Int64(bitPattern: stamp), app: app, kind: Self.kinds[Int(bytes[offset + 8])],
            reason: Self.reasons[Int(bytes[offset + 9])], message: message)
    }

    /// Appends the message's UTF-8 to `out`, every occurrence of `app` replaced by ``appMark``.
    private static func encode(_ text: UnsafeBufferPointer<UInt8>, app id: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) {
        var i = 0
        while i < text.count {
            let byte = text[i]
            if !id.isEmpty, byte == id[0], i + id.count <= text.count,
                UnsafeBufferPointer(rebasing: text[i..<i + id.count]).elementsEqual(id)
            {
                out.append(appMark)
                i += id.count
                continue
            }
            if byte == appMark || byte == escape { out.append(escape) }
            out.append(byte)
            i += 1
        }
    }

    private static func decode(_ stored: ArraySlice<UInt8>, app: AppID) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(stored.count + 64)
        var i = stored.startIndex
        while i < stored.endIndex {
            let byte = stored[i]
            if byte == appMark {
                out.append(contentsOf: app.rawValue.utf8)
            } else if byte == escape, i + 1 < stored.endIndex {
                i += 1
                out.append(stored[i])
            } else {
                out.append(byte)
            }
            i += 1
        }
        return String(decoding: out, as: UTF8.self)
    }
}
