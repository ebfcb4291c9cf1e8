import BGTaskCore
import BGTaskProtocol
import BGTaskVarlink
import Dispatch

/// Where a recording is rendered and encoded: off the daemon's queue (16 MiB of inputs take long to render).
let recordingQueue = DispatchQueue(label: "bgtaskd.recording", qos: .utility)

// SPEC §17: `GetRecording` (root or ControlGroup=, as every control method; called with more).
extension DaemonService {
    /// The largest part of the document one reply carries (the client reads messages up to 16 MiB).
    static let recordingPartBytes = 1 << 20

    /// Sends the recording as one JSON document in parts of at most ``recordingPartBytes`` bytes. The
    /// recording as of now (a copy: the values are shared, nothing is copied) is rendered off the queue.
    func sendRecording(_ request: VarlinkRequest) {
        guard request.call.more else { return request.fail(.expectedMore) }
        guard let recorder = recording else { return request.fail(ManagerError.unavailable(reason: "recording-off")) }
        let queue = self.queue
        recordingQueue.async { @Sendable in
            let parts = Self.recordingParts(recorder)
            queue.async { @Sendable in
                switch parts {
                case .success(let parts):
                    // One document: a recording of 9 MB under load is read at the client's pace, not
                    // cut off at the unread-replies limit (8 MiB) behind its last part.
                    request.replyInParts {
                        for (i, part) in parts.enumerated() {
                            request.reply(ManagerWire.GetRecordingReply(part: part), continues: i < parts.count - 1)
                        }
                    }
                case .failure(let error):
                    request.fail(ManagerError.unavailable(reason: "recording-not-encoded: \(error.description)"))
                }
            }
        }
    }

    /// The recording's JSON document (and a newline) cut into parts, never inside a UTF-8 sequence.
    static func recordingParts(_ recorder: InputRecorder) -> Result<[String], JSONCodingError> {
        let document: JSON
        do {
            document = try JSON.encode(try recorder.recording())
        } catch let error as JSONCodingError {
            return .failure(error)
        } catch {
            return .failure(JSONCodingError([], "\(error)"))
        }
        var bytes: [UInt8] = []
        document.write(into: &bytes)
        bytes.append(UInt8(ascii: "\n"))
        var parts: [String] = []
        var start = 0
        while start < bytes.count {
            var end = min(bytes.count, start + recordingPartBytes)
            while end < bytes.count, bytes[end] & 0xC0 == 0x80 { end -= 1 }
            parts.append(String(decoding: bytes[start..<end], as: UTF8.self))
            start = end
        }
        return .success(parts)
    }
}
