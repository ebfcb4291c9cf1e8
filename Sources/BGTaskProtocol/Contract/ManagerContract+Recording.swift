extension ManagerWire {
    /// One part of `GetRecording`'s JSON document (SPEC §17): the parts, in order, are the document.
    public struct GetRecordingReply: WireMessage {
        public static let fields = ["part"]
        public var part: String
        public init(part: String) { self.part = part }
        public init(json: [String: JSON]) throws(WireFieldError) { part = try WireReader(json).string("part") }
        public var json: [String: JSON] { ["part": .string(part)] }
    }
}
