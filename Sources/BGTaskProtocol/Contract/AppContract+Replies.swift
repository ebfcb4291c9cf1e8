public import BGTaskModel

// The replies of the methods of `io.bgtaskd.App`.
extension AppWire {
    /// A reply of the CheckIn stream: the first carries no event, every later one exactly one. The
    /// daemon leaves `refreshStatus` out of event replies.
    public struct CheckInReply: WireMessage {
        public static let fields = ["state", "refreshStatus", "event"]
        public var state: AppState
        public var refreshStatus: RefreshStatus?
        public var event: Event?
        public init(state: AppState, refreshStatus: RefreshStatus?, event: Event?) {
            self.state = state
            self.refreshStatus = refreshStatus
            self.event = event
        }
        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(state: try r.value("state"), refreshStatus: try r.optionalValue("refreshStatus"), event: try r.optionalMessage("event"))
        }
        public var json: [String: JSON] {
            var o: [String: JSON] = ["state": .raw(state)]
            o.put("refreshStatus", refreshStatus.map { .raw($0) })
            o.put("event", event.map { .object($0.json) })
            return o
        }
        /// Keys in sorted order (event, refreshStatus, state), as `JSON.write` puts them.
        public func write(into out: inout [UInt8]) {
            out.append(UInt8(ascii: "{"))
            if let event {
                out.append(contentsOf: #""event":"#.utf8)
                event.write(into: &out)
                out.append(UInt8(ascii: ","))
            }
            if let refreshStatus {
                out.append(contentsOf: #""refreshStatus":"#.utf8)
                JSON.writeString(refreshStatus.rawValue, into: &out)
                out.append(UInt8(ascii: ","))
            }
            out.append(contentsOf: #""state":"#.utf8)
            JSON.writeString(state.rawValue, into: &out)
            out.append(UInt8(ascii: "}"))
        }
    }

    public struct BeginBackgroundTaskReply: WireMessage {
        public static let fields = ["taskId"]
        /// 0: denied.
        public var taskId: Int64
        public init(taskId: Int64) { self.taskId = taskId }
        public init(json: [String: JSON]) throws(WireFieldError) { taskId = try WireReader(json).int("taskId") }
        public var json: [String: JSON] { ["taskId": .int(taskId)] }
        public func write(into out: inout [UInt8]) {
            out.append(contentsOf: #"{"taskId":"#.utf8)
            JSON.writeInt(taskId, into: &out)
            out.append(UInt8(ascii: "}"))
        }
    }

    public struct BackgroundTimeRemainingReply: WireMessage {
        public static let fields = ["remainingUSec"]
        /// nil (null on the wire): in the foreground, unlimited.
        public var remainingUSec: Int64?
        public init(remainingUSec: Int64?) { self.remainingUSec = remainingUSec }
        public init(json: [String: JSON]) throws(WireFieldError) { remainingUSec = try WireReader(json).optionalInt("remainingUSec") }
        public var json: [String: JSON] { ["remainingUSec": .orNull(remainingUSec)] }
    }

    public struct BeginActivityReply: WireMessage {
        public static let fields = ["activityId"]
        public var activityId: Int64
        public init(activityId: Int64) { self.activityId = activityId }
        public init(json: [String: JSON]) throws(WireFieldError) { activityId = try WireReader(json).int("activityId") }
        public var json: [String: JSON] { ["activityId": .int(activityId)] }
        public func write(into out: inout [UInt8]) {
            out.append(contentsOf: #"{"activityId":"#.utf8)
            JSON.writeInt(activityId, into: &out)
            out.append(UInt8(ascii: "}"))
        }
    }

    public struct PendingTaskRequestsReply: WireMessage {
        public static let fields = ["requests"]
        public var requests: [TaskRequest]
        public init(requests: [TaskRequest]) { self.requests = requests }
        public init(json: [String: JSON]) throws(WireFieldError) { requests = try WireReader(json).messages("requests") }
        public var json: [String: JSON] { ["requests": .array(requests.map { .object($0.json) })] }
    }

    public struct RefreshStatusReply: WireMessage {
        public static let fields = ["status"]
        public var status: RefreshStatus
        public init(status: RefreshStatus) { self.status = status }
        public init(json: [String: JSON]) throws(WireFieldError) { status = try WireReader(json).value("status") }
        public var json: [String: JSON] { ["status": .raw(status)] }
    }
}
