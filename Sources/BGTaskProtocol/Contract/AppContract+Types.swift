public import BGTaskModel

// The `type` declarations of `io.bgtaskd.App`.
extension AppWire {
    /// `type Event`: one lifecycle event of the CheckIn stream. Optional fields are left out when absent.
    public struct Event: WireMessage {
        public static let fields = [
            "id", "kind", "state", "needsAck", "taskId", "taskName", "identifier", "name", "payload", "launchReason",
            "deadlineUSec", "sceneId", "title", "output", "path",
        ]
        public var id: Int64
        public var kind: LifecycleEventKind
        public var state: AppState
        public var needsAck: Bool
        public var taskId: Int64?
        public var taskName: String?
        public var identifier: String?
        public var name: String?
        /// A JSON object.
        public var payload: JSON?
        public var launchReason: LaunchReason?
        public var deadlineUSec: Int64?
        /// SPEC §15: the scene of a scene event, its title and display; `path`: where `scene-snapshot` wants the PNG.
        public var sceneId: String? = nil
        public var title: String? = nil
        public var output: String? = nil
        public var path: String? = nil

        public init(
            id: Int64, kind: LifecycleEventKind, state: AppState, needsAck: Bool, taskId: Int64? = nil,
            taskName: String? = nil, identifier: String? = nil, name: String? = nil, payload: JSON? = nil,
            launchReason: LaunchReason? = nil, deadlineUSec: Int64? = nil
        ) {
            self.id = id
            self.kind = kind
            self.state = state
            self.needsAck = needsAck
            self.taskId = taskId
            self.taskName = taskName
            self.identifier = identifier
            self.name = name
            self.payload = payload
            self.launchReason = launchReason
            self.deadlineUSec = deadlineUSec
        }

        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(
                id: try r.int("id"), kind: try r.value("kind"), state: try r.value("state"), needsAck: try r.bool("needsAck"),
                taskId: try r.optionalInt("taskId"), taskName: try r.optionalString("taskName"),
                identifier: try r.optionalString("identifier"), name: try r.optionalString("name"),
                payload: try r.optionalObject("payload"), launchReason: try r.optionalValue("launchReason"),
                deadlineUSec: try r.optionalInt("deadlineUSec"))
            sceneId = try r.optionalString("sceneId")
            title = try r.optionalString("title")
            output = try r.optionalString("output")
            path = try r.optionalString("path")
        }

        public var json: [String: JSON] {
            var o: [String: JSON] = ["id": .int(id), "kind": .raw(kind), "state": .raw(state), "needsAck": .bool(needsAck)]
            o.put("taskId", taskId.map { .int($0) })
            o.put("taskName", taskName.map { .string($0) })
            o.put("identifier", identifier.map { .string($0) })
            o.put("name", name.map { .string($0) })
            o.put("payload", payload)
            o.put("launchReason", launchReason.map { .raw($0) })
            o.put("deadlineUSec", deadlineUSec.map { .int($0) })
            o.put("sceneId", sceneId.map { .string($0) })
            o.put("title", title.map { .string($0) })
            o.put("output", output.map { .string($0) })
            o.put("path", path.map { .string($0) })
            return o
        }

        /// Keys in sorted order, as `JSON.write` puts them, from preformatted parts.
        public func write(into out: inout [UInt8]) {
            out.append(UInt8(ascii: "{"))
            if let deadlineUSec {
                out.append(contentsOf: #""deadlineUSec":"#.utf8)
                JSON.writeInt(deadlineUSec, into: &out)
                out.append(UInt8(ascii: ","))
            }
            out.append(contentsOf: #""id":"#.utf8)
            JSON.writeInt(id, into: &out)
            if let identifier {
                out.append(contentsOf: #","identifier":"#.utf8)
                JSON.writeString(identifier, into: &out)
            }
            out.append(contentsOf: #","kind":"#.utf8)
            JSON.writeString(kind.rawValue, into: &out)
            if let launchReason {
                out.append(contentsOf: #","launchReason":"#.utf8)
                JSON.writeString(launchReason.rawValue, into: &out)
            }
            if let name {
                out.append(contentsOf: #","name":"#.utf8)
                JSON.writeString(name, into: &out)
            }
            out.append(contentsOf: needsAck ? #","needsAck":true"#.utf8 : #","needsAck":false"#.utf8)
            if let output {
                out.append(contentsOf: #","output":"#.utf8)
                JSON.writeString(output, into: &out)
            }
            if let path {
                out.append(contentsOf: #","path":"#.utf8)
                JSON.writeString(path, into: &out)
            }
            if let payload {
                out.append(contentsOf: #","payload":"#.utf8)
                payload.write(into: &out)
            }
            if let sceneId {
                out.append(contentsOf: #","sceneId":"#.utf8)
                JSON.writeString(sceneId, into: &out)
            }
            out.append(contentsOf: #","state":"#.utf8)
            JSON.writeString(state.rawValue, into: &out)
            if let taskId {
                out.append(contentsOf: #","taskId":"#.utf8)
                JSON.writeInt(taskId, into: &out)
            }
            if let taskName {
                out.append(contentsOf: #","taskName":"#.utf8)
                JSON.writeString(taskName, into: &out)
            }
            if let title {
                out.append(contentsOf: #","title":"#.utf8)
                JSON.writeString(title, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// `type TaskRequest`: a pending scheduled task request.
    public struct TaskRequest: WireMessage {
        public static let fields = ["identifier", "kind", "earliestBeginUSec", "requiresNetwork", "requiresExternalPower"]
        public var identifier: String
        public var kind: TaskKind
        public var earliestBeginUSec: Int64?
        public var requiresNetwork: Bool
        public var requiresExternalPower: Bool

        public init(identifier: String, kind: TaskKind, earliestBeginUSec: Int64?, requiresNetwork: Bool, requiresExternalPower: Bool) {
            self.identifier = identifier
            self.kind = kind
            self.earliestBeginUSec = earliestBeginUSec
            self.requiresNetwork = requiresNetwork
            self.requiresExternalPower = requiresExternalPower
        }

        public init(json: [String: JSON]) throws(WireFieldError) {
            let r = WireReader(json)
            self.init(
                identifier: try r.string("identifier"), kind: try r.value("kind"),
                earliestBeginUSec: try r.optionalInt("earliestBeginUSec"), requiresNetwork: try r.bool("requiresNetwork"),
                requiresExternalPower: try r.bool("requiresExternalPower"))
        }

        public var json: [String: JSON] {
            var o: [String: JSON] = [
                "identifier": .string(identifier), "kind": .raw(kind), "requiresNetwork": .bool(requiresNetwork),
                "requiresExternalPower": .bool(requiresExternalPower),
            ]
            o.put("earliestBeginUSec", earliestBeginUSec.map { .int($0) })
            return o
        }
    }
}
