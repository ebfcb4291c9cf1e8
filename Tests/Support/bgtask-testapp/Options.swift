import BGTaskClient

#if canImport(Glibc)
import Glibc
#endif

/// The command-line options (see main.swift).
struct Options: Sendable {
    var appID: String?
    var socket: String?
    var output: String?
    var commands: String?
    var exitOnEOF = false
    var noAck = false
    var ackDelayMs: Int?
    var manualAck = false
    var beginTaskOnBackground: String?
    var endTaskAfterMs: Int?
    var ignoreExpiration = false
    var holdTask = false
    var registeredTasks: [String] = []
    var taskDurationMs = 0
    var taskFail = false
    var noCompleteTask = false
    var ignoreTaskExpiration = false
    var stayOnTerminate = false
    var ignoreSigterm = false

    struct Invalid: Error {
        var message: String
    }

    static func parse(_ arguments: [String]) throws(Invalid) -> Options {
        var o = Options()
        var i = 0
        func value(_ flag: String) throws(Invalid) -> String {
            i += 1
            guard i < arguments.count else { throw Invalid(message: "\(flag) needs a value") }
            return arguments[i]
        }
        func number(_ flag: String) throws(Invalid) -> Int {
            let text = try value(flag)
            guard let n = Int(text), n >= 0 else { throw Invalid(message: "\(flag): not a number: \(text)") }
            return n
        }
        while i < arguments.count {
            let flag = arguments[i]
            switch flag {
            case "--app-id": o.appID = try value(flag)
            case "--socket": o.socket = try value(flag)
            case "--output": o.output = try value(flag)
            case "--commands": o.commands = try value(flag)
            case "--exit-on-eof": o.exitOnEOF = true
            case "--no-ack": o.noAck = true
            case "--ack-delay-ms": o.ackDelayMs = try number(flag)
            case "--manual-ack": o.manualAck = true
            case "--begin-task-on-background": o.beginTaskOnBackground = try value(flag)
            case "--end-task-after-ms": o.endTaskAfterMs = try number(flag)
            case "--ignore-expiration": o.ignoreExpiration = true
            case "--hold-task": o.holdTask = true
            case "--register-task":
                o.registeredTasks += try value(flag).split(separator: ",").map(String.init)
            case "--task-duration-ms": o.taskDurationMs = try number(flag)
            case "--task-fail": o.taskFail = true
            case "--no-complete-task": o.noCompleteTask = true
            case "--ignore-task-expiration": o.ignoreTaskExpiration = true
            case "--stay-on-terminate": o.stayOnTerminate = true
            case "--ignore-sigterm": o.ignoreSigterm = true
            case "-h", "--help": throw Invalid(message: "options: see the top of Tests/Support/bgtask-testapp/main.swift")
            default: throw Invalid(message: "unknown option \(flag)")
            }
            i += 1
        }
        return o
    }

    /// `$BGTASK_TESTAPP_OPTIONS` then argv.
    static func fromEnvironmentAndArguments() throws(Invalid) -> Options {
        var arguments: [String] = []
        if let raw = getenv("BGTASK_TESTAPP_OPTIONS") {
            arguments += String(cString: raw).split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).map(String.init)
        }
        arguments += CommandLine.arguments.dropFirst()
        return try parse(arguments)
    }
}
