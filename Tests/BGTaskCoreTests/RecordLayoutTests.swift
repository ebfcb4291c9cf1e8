import Foundation
import Testing
@testable import BGTaskCore

/// The app record's size (10,000 of them at row 4's scale) and its out-of-line fields: read and written as
/// their values, encoded as the values themselves (a checkpoint keeps its shape).
@Suite struct RecordLayoutTests {
    @Test func anAppRecordIsAtMost216Bytes() {
        #expect(MemoryLayout<AppRecord>.stride <= 216, "\(MemoryLayout<AppRecord>.stride)")
    }

    @Test func defaultedAndOutOfLineFieldsReadWriteAndEncodeAsTheirValues() throws {
        let app = AppID("org.example.Layout")!
        var record = AppRecord(manifest: AppManifest(id: app, lifecycleAware: true), lastUsed: .zero)
        #expect(record.device == DeviceRecord() && record.scenes == AppScenes() && record.wake == nil)
        record.device.freezeTimeouts = 2
        record.scenes.activations = 3
        record.wake = Wake(event: nil, deadline: Instant(microseconds: 9))
        let copy = record
        record.device.freezeTimeouts = 5  // a copy keeps its value
        #expect(copy.device.freezeTimeouts == 2 && record.device.freezeTimeouts == 5)
        let object = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(copy)) as? [String: Any])
        #expect((object["device"] as? [String: Any])?["freezeTimeouts"] as? Int == 2)
        #expect((object["scenes"] as? [String: Any])?["activations"] as? Int == 3)
        #expect((object["wake"] as? [String: Any])?["deadline"] != nil && object["launch"] == nil)
        let decoded = try JSONDecoder().decode(AppRecord.self, from: JSONEncoder().encode(copy))
        #expect(decoded.device == copy.device && decoded.scenes == copy.scenes && decoded.wake == copy.wake)
        record.device = DeviceRecord()
        #expect(record.device == DeviceRecord())
    }
}
