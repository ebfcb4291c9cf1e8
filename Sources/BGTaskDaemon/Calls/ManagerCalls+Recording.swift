import BGTaskCore
import BGTaskProtocol
import BGTaskVarlink

// SPEC §17: `GetRecording` (root or ControlGroup=, as every control method; called with more).
extension DaemonService {
    /// The largest part of the document one reply carries (the client reads messages up to 16 MiB).
    static let recordingPartBytes = 1 << 20

    /// Sends the recording as one JSON document in parts of at most ``recordingPartBytes`` bytes.
    func sendRecording(_ request: VarlinkRequest) {
        guard request.call.more else { return request.fail(.expectedMore) }
        guard let recording else { return request.fail(ManagerError.unavailable(reason: "recording-off")) }
        let document: JSON
        do {
            document = try JSON.encode(recording.recording())
        } catch {
            return request.fail(ManagerError.unavailable(reason: "recording-not-encoded: \(error)"))
        }
        var bytes: [UInt8] = []
        document.write(into: &bytes)
        bytes.append(UInt8(ascii: "\n"))
        var start = 0
        while start < bytes.count {
            var end = min(bytes.count, start + Self.recordingPartBytes)
            // Never inside a UTF-8 sequence: each part is text of its own.
            while end < bytes.count, bytes[end] & 0xC0 == 0x80 { end -= 1 }
            let part = String(decoding: bytes[start..<end], as: UTF8.self)
            request.reply(ManagerWire.GetRecordingReply(part: part), continues: end < bytes.count)
            start = end
        }
    }
}
