// The daemon's codec work for one Begin/End pair, without sockets or the core: the call's bytes through
// the inbound decoder (framing + decoding), the checks against the interface description, the few
// parameters the handler reads, and the reply's bytes. Built and measured by build.sh.
import BGTaskProtocol
#if TYPED_IDS
import BGTaskModel
#endif

@inline(never) func sink(_ x: Int) { if x == -1 { print(x) } }

@main struct Driver {
    static func main() {
        let n = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 1000
        var registry = VarlinkInterfaceRegistry()
        try? registry.register(description: Interfaces.app)
        var decoder = VarlinkInboundDecoder(maxMessageSize: 65536)
        let begin = Array(#"{"method":"io.bgtaskd.App.BeginBackgroundTask","parameters":{"appId":"org.example.Mail","name":"sync"}}"#.utf8) + [0]
        let endPrefix = Array(#"{"method":"io.bgtaskd.App.EndBackgroundTask","parameters":{"appId":"org.example.Mail","taskId":"#.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(256)
        var total = 0
        for i in 0..<n {
            let taskId = Int64(i + 1)
            // Begin
            decoder.append(begin)
            guard case .call(let call)? = decoder.next(), registry.check(call) == nil else { fatalError("begin") }
            #if CONTRACT
            // As the daemon's AppCalls: the method, the app (checked first), then the parameters.
            guard AppMethod(call) == .beginBackgroundTask, let app = try? WireAppID.of(call) else { fatalError("method") }
            total &+= app.utf8.count
            guard let p = try? call.decode(AppWire.BeginBackgroundTask.self) else { fatalError("begin params") }
            total &+= p.appId.utf8.count &+ (p.name?.utf8.count ?? 0)
            out.removeAll(keepingCapacity: true)
            #if TYPED_IDS
            VarlinkReply(AppWire.BeginBackgroundTaskReply(taskId: TaskID(UInt64(taskId)))).append(to: &out)
            #else
            VarlinkReply(AppWire.BeginBackgroundTaskReply(taskId: taskId)).append(to: &out)
            #endif
            #else
            // As the daemon's handleApp before the contract: the interface, Acknowledge?, the app, the method.
            guard call.interface == Interfaces.appName[...], call.methodName != "Acknowledge" else { fatalError("method") }
            guard case .string(let app)? = call.parameters["appId"], call.methodName == "BeginBackgroundTask" else {
                fatalError("appId")
            }
            let name = call.parameters["name"]?.stringValue
            total &+= app.utf8.count &+ (name?.utf8.count ?? 0)
            out.removeAll(keepingCapacity: true)
            VarlinkReply(parameters: ["taskId": .int(taskId)]).append(to: &out)
            #endif
            total &+= out.count
            // End
            decoder.append(endPrefix + Array(String(taskId).utf8) + Array("}}".utf8) + [0])
            guard case .call(let end)? = decoder.next(), registry.check(end) == nil else { fatalError("end") }
            #if CONTRACT
            guard AppMethod(end) == .endBackgroundTask, let endApp = try? WireAppID.of(end) else { fatalError("method") }
            total &+= endApp.utf8.count
            guard let e = try? end.decode(AppWire.EndBackgroundTask.self) else { fatalError("end params") }
            #if TYPED_IDS
            total &+= Int(e.taskId.rawValue)
            #else
            total &+= Int(e.taskId)
            #endif
            #else
            guard end.interface == Interfaces.appName[...], end.methodName != "Acknowledge",
                case .string(let endApp)? = end.parameters["appId"], end.methodName == "EndBackgroundTask"
            else { fatalError("method") }
            total &+= endApp.utf8.count
            guard let t = end.parameters["taskId"]?.intValue else { fatalError("taskId") }
            total &+= Int(t)
            #endif
            out.removeAll(keepingCapacity: true)
            VarlinkReply().append(to: &out)
            total &+= out.count
        }
        sink(total)
        print(total)
    }
}
