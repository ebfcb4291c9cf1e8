import BGTaskClient
import BGTaskProtocol
import Dispatch

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// Writes one JSON object per line with `write(2)` (no buffering; appends are atomic on a regular file).
final class Output: Sendable {
    private let fd: Int32

    init(fd: Int32) { self.fd = fd }

    static func open(_ path: String?) -> Output? {
        guard let path else { return Output(fd: 1) }
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        return fd >= 0 ? Output(fd: fd) : nil
    }

    /// One line: the keys in the order given, then `monotonicUSec`.
    func line(_ pairs: [(String, JSON)]) {
        var text = "{"
        for (key, value) in pairs + [("monotonicUSec", .int(monotonicUSec()))] {
            if text.count > 1 { text += "," }
            text += JSON.string(key).serialized() + ":" + value.serialized()
        }
        text += "}\n"
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress.map { $0 + offset }, $0.count - offset) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return }
            offset += n
        }
    }
}

func monotonicUSec() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
}

func stateJSON(_ state: BGApplication.State) -> JSON { .string(state.rawValue) }

func errorPairs(_ error: BGTaskClientError) -> [(String, JSON)] {
    [("error", .string(error.name)), ("message", .string(error.description))]
}

enum TestApp {
    @MainActor
    static func main() -> Never {
        let options: Options
        do {
            options = try Options.fromEnvironmentAndArguments()
        } catch {
            Output(fd: 2).line([("error", .string(error.message))])
            exit(2)
        }
        guard let output = Output.open(options.output) else {
            Output(fd: 2).line([("error", .string("cannot open \(options.output ?? "")"))])
            exit(2)
        }
        let app = BGApplication(
            appID: options.appID ?? BGApplication.environmentAppID ?? "",
            socketPath: options.socket ?? BGApplication.environmentSocketPath)
        let delegate = TestAppDelegate(app: app, options: options, output: output)
        app.delegate = delegate
        app.exitsOnTerminate = !options.stayOnTerminate
        delegate.install()
        output.line([
            ("status", "started"), ("appId", .string(app.appID)), ("socket", .string(app.socketPath)),
            ("pid", .int(Int64(getpid()))),
        ])
        app.run()
    }
}

@MainActor
final class TestAppDelegate: BGApplicationDelegate {
    let app: BGApplication
    let options: Options
    let output: Output
    private var heldAcknowledgements: [Int64: BGEventAcknowledgement] = [:]
    private var taskNames: [BackgroundTaskIdentifier: String] = [:]
    private var runningTasks: [String: BGTask] = [:]
    private var signalSource: (any DispatchSourceSignal)?

    init(app: BGApplication, options: Options, output: Output) {
        self.app = app
        self.options = options
        self.output = output
    }

    func install() {
        for identifier in options.registeredTasks {
            app.taskScheduler.register(forTaskWithIdentifier: identifier, using: nil) { [self] task in
                MainActor.assumeIsolated { perform(task) }
            }
        }
        signal(SIGTERM, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGTERM, queue: .main)
        let ignore = options.ignoreSigterm
        let output = self.output
        source.setEventHandler {
            output.line([("signal", "SIGTERM")])
            if !ignore {
                signal(SIGTERM, SIG_DFL)
                raise(SIGTERM)
            }
        }
        source.resume()
        signalSource = source
        startCommandReader()
    }

    // MARK: Events

    func application(_ application: BGApplication, didReceive event: BGApplicationEvent) {
        var pairs: [(String, JSON)] = [("event", .string(event.kind.rawValue))]
        if let fields = event.json.objectValue {
            for key in fields.keys.sorted() where key != "kind" {
                if let value = fields[key] { pairs.append((key, value)) }
            }
        }
        pairs.append(("applicationState", stateJSON(application.applicationState)))
        output.line(pairs)
    }

    func applicationDidCheckIn(_ application: BGApplication) {
        output.line([
            ("status", "checked-in"), ("applicationState", stateJSON(application.applicationState)),
            ("lifecycleState", application.lifecycleState.map { .string($0.rawValue) } ?? .null),
            ("refreshStatus", .string(application.backgroundRefreshStatus.rawValue)),
        ])
    }

    func application(_ application: BGApplication, connectionDidFail error: BGTaskClientError) {
        output.line([("status", "connection-failed")] + errorPairs(error))
    }

    func applicationDidEnterBackground(_ application: BGApplication) {
        if let name = options.beginTaskOnBackground {
            beginTask(name, reason: "did-enter-background", timer: options.endTaskAfterMs)
        }
        if options.noAck || options.manualAck {
            hold(application.deferAcknowledgement())
        } else if let delay = options.ackDelayMs, let acknowledgement = application.deferAcknowledgement() {
            let output = self.output
            DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(delay)) {
                acknowledgement.acknowledge()
                output.line([("action", "ack"), ("eventId", .int(acknowledgement.eventID))])
            }
        }
    }

    func application(_ application: BGApplication, didReceiveNotification name: String, payload: JSON?) {
        if options.manualAck { hold(application.deferAcknowledgement()) }
    }

    private func hold(_ acknowledgement: BGEventAcknowledgement?) {
        guard let acknowledgement else { return }
        heldAcknowledgements[acknowledgement.eventID] = acknowledgement
        output.line([("action", "ack-held"), ("eventId", .int(acknowledgement.eventID))])
    }

    // MARK: Background tasks

    @discardableResult
    private func beginTask(_ name: String, reason: String, timer: Int?) -> [(String, JSON)] {
        let result: [(String, JSON)]
        do {
            let id = try app.requestBackgroundTask(withName: name) { [self] id in expired(id) }
            if id != .invalid { taskNames[id] = name }
            result = [("name", .string(name)), ("taskId", .int(Int64(id.rawValue)))]
            if id != .invalid, let ms = timer, !options.holdTask {
                DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(ms)) { [self] in
                    endTask(id, reason: "timer")
                }
            }
        } catch {
            result = [("name", .string(name)), ("taskId", 0)] + errorPairs(error)
        }
        output.line([("action", "begin")] + result + [("reason", .string(reason))])
        return result
    }

    private func endTask(_ id: BackgroundTaskIdentifier, reason: String) {
        guard taskNames.removeValue(forKey: id) != nil else { return }
        app.endBackgroundTask(id)
        output.line([("action", "end"), ("taskId", .int(Int64(id.rawValue))), ("reason", .string(reason))])
    }

    private func expired(_ id: BackgroundTaskIdentifier) {
        let ends = !options.ignoreExpiration && !options.holdTask
        output.line([
            ("action", "expiration"), ("taskId", .int(Int64(id.rawValue))),
            ("name", taskNames[id].map { .string($0) } ?? .null), ("ended", .bool(ends)),
        ])
        if ends { endTask(id, reason: "expiration") }
    }

    // MARK: Scheduled tasks

    private func perform(_ task: BGTask) {
        runningTasks[task.identifier] = task
        output.line([("action", "perform-task"), ("identifier", .string(task.identifier))])
        let output = self.output
        let completeOnExpiration = !options.ignoreTaskExpiration
        task.expirationHandler = { [weak task] in
            guard let task else { return }
            output.line([
                ("action", "task-expiration"), ("identifier", .string(task.identifier)),
                ("completed", .bool(completeOnExpiration)),
            ])
            if completeOnExpiration {
                task.setTaskCompleted(success: false)
                output.line([("action", "complete"), ("identifier", .string(task.identifier)), ("success", false)])
            }
        }
        guard !options.noCompleteTask else { return }
        let success = !options.taskFail
        DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(options.taskDurationMs)) { [self] in
            _ = complete(task.identifier, success: success)
        }
    }

    private func complete(_ identifier: String, success: Bool) -> Bool {
        guard let task = runningTasks.removeValue(forKey: identifier) else { return false }
        task.setTaskCompleted(success: success)
        output.line([("action", "complete"), ("identifier", .string(identifier)), ("success", .bool(success))])
        return true
    }

    // MARK: Commands

    private func startCommandReader() {
        let path = options.commands
        let exitOnEOF = options.exitOnEOF && path == nil
        DispatchQueue.global().async { [self] in
            repeat {
                let fd = path.map { Glibc.open($0, O_RDONLY | O_CLOEXEC) } ?? 0
                guard fd >= 0 else { return }
                var pending: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 4096)
                while true {
                    let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                    if n < 0 && errno == EINTR { continue }
                    if n <= 0 { break }
                    pending += buffer[0..<n]
                    while let newline = pending.firstIndex(of: 0x0A) {
                        let line = String(decoding: pending[..<newline], as: UTF8.self)
                        pending.removeSubrange(...newline)
                        DispatchQueue.main.async { MainActor.assumeIsolated { self.run(command: line) } }
                    }
                }
                if fd != 0 { close(fd) }
            } while path != nil
            if exitOnEOF { DispatchQueue.main.async { exit(0) } }
        }
    }

    func run(command line: String) {
        let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }).map(String.init)
        guard let verb = words.first else { return }
        let args = Array(words.dropFirst())
        var reply: [(String, JSON)] = [("command", .string(verb))]
        func fail(_ message: String) { reply += [("error", "usage"), ("message", .string(message))] }
        switch verb {
        case "begin":
            reply += beginTask(args.first ?? "command", reason: "command", timer: nil)
        case "end":
            guard let raw = args.first, let n = Int(raw) else { fail("end ID"); break }
            let id = BackgroundTaskIdentifier(rawValue: n)
            taskNames[id] = nil
            app.endBackgroundTask(id)
            reply.append(("taskId", .int(Int64(n))))
        case "remaining":
            let seconds = app.backgroundTimeRemaining
            reply.append(("remainingSec", seconds == .greatestFiniteMagnitude ? .null : .double(seconds)))
        case "state":
            reply += [
                ("applicationState", stateJSON(app.applicationState)),
                ("lifecycleState", app.lifecycleState.map { .string($0.rawValue) } ?? .null),
                ("refreshStatus", .string(app.backgroundRefreshStatus.rawValue)),
                ("checkedIn", .bool(app.isCheckedIn)),
            ]
        case "ack":
            guard let raw = args.first, let id = Int64(raw) else { fail("ack ID"); break }
            reply.append(("eventId", .int(id)))
            if let acknowledgement = heldAcknowledgements.removeValue(forKey: id) {
                acknowledgement.acknowledge()
            } else {
                reply += [("error", "no-such-acknowledgement"), ("message", .string("no acknowledgement held for \(id)"))]
            }
        case "submit":
            guard args.count >= 2, args[0] == "refresh" || args[0] == "processing" else {
                fail("submit refresh|processing ID [DELAY_SEC] [network] [power]")
                break
            }
            let request: BGTaskRequest
            if args[0] == "refresh" {
                request = BGAppRefreshTaskRequest(identifier: args[1])
            } else {
                let processing = BGProcessingTaskRequest(identifier: args[1])
                processing.requiresNetworkConnectivity = args.contains("network")
                processing.requiresExternalPower = args.contains("power")
                request = processing
            }
            if args.count > 2, let delay = Double(args[2]) {
                request.earliestBeginDate = Date(timeIntervalSinceNow: delay)
            }
            reply.append(("identifier", .string(args[1])))
            do {
                try app.taskScheduler.submit(request)
                reply.append(("ok", true))
            } catch {
                reply += [("ok", false), ("error", .string(schedulerErrorName(error))), ("message", .string(error.description))]
            }
        case "cancel":
            guard let identifier = args.first else { fail("cancel ID"); break }
            app.taskScheduler.cancel(taskRequestWithIdentifier: identifier)
            reply.append(("identifier", .string(identifier)))
        case "cancel-all":
            app.taskScheduler.cancelAllTaskRequests()
        case "pending":
            do {
                let requests = try app.taskScheduler.pendingTaskRequests()
                reply.append(("requests", .array(requests.map(requestJSON))))
            } catch {
                reply += [("error", .string(schedulerErrorName(error))), ("message", .string(error.description))]
            }
        case "complete":
            guard let identifier = args.first else { fail("complete ID [true|false]"); break }
            let success = args.count < 2 || args[1] == "true"
            reply += [("identifier", .string(identifier)), ("success", .bool(success))]
            if !complete(identifier, success: success) {
                reply += [("error", "no-such-task"), ("message", .string("no running task \(identifier)"))]
            }
        case "activity":
            guard let mode = args.first else { fail("activity MODE"); break }
            do {
                let id = try app.beginActivity(BackgroundMode(rawValue: mode))
                reply += [("mode", .string(mode)), ("activityId", .int(Int64(id.rawValue)))]
            } catch {
                reply += [("mode", .string(mode))] + errorPairs(error)
            }
        case "end-activity":
            guard let raw = args.first, let n = Int(raw) else { fail("end-activity ID"); break }
            app.endActivity(BackgroundActivityIdentifier(rawValue: n))
            reply.append(("activityId", .int(Int64(n))))
        case "exit":
            let status = args.first.flatMap { Int32($0) } ?? 0
            reply.append(("status", .int(Int64(status))))
            output.line(reply)
            exit(status)
        default:
            reply += [("error", "unknown-command"), ("message", .string(line))]
        }
        output.line(reply)
    }

    private func requestJSON(_ request: BGTaskRequest) -> JSON {
        var o: [String: JSON] = ["identifier": .string(request.identifier)]
        if let processing = request as? BGProcessingTaskRequest {
            o["kind"] = "processing"
            o["requiresNetwork"] = .bool(processing.requiresNetworkConnectivity)
            o["requiresExternalPower"] = .bool(processing.requiresExternalPower)
        } else {
            o["kind"] = "refresh"
        }
        if let date = request.earliestBeginDate { o["earliestBeginSec"] = .double(date.timeIntervalSince1970) }
        return .object(o)
    }

    private func schedulerErrorName(_ error: BGTaskSchedulerError) -> String {
        switch error {
        case .notPermitted: return "NotPermitted"
        case .tooManyPendingTaskRequests: return "TooManyPendingTaskRequests"
        case .unavailable: return "Unavailable"
        case .failed(let e): return e.name
        }
    }
}
