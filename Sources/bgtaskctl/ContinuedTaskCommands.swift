import BGTaskCommandLine
import BGTaskModel
import BGTaskCtlKit
import BGTaskProtocol

/// SPEC §16: `bgtaskctl cancel APP TASK`: the user cancels a continued task (its expiration handler runs);
/// without arguments, the live continued tasks with their progress.
struct Cancel: CtlVerb {
    static let verb = VerbLine.Verb(
        "cancel",
        abstract: "Cancel an app's continued task (CancelContinuedTask); without arguments, list the continued tasks (ListContinuedTasks).",
        options: GlobalOptions.options + [.flag("json", help: "List as JSON (without arguments).")],
        arguments: [Argument("app", help: "The app's ID.", optional: true),
                    Argument("task", help: "The continued task's identifier (taskId).", optional: true)])

    var global: GlobalOptions
    var json: Bool
    var app: String?
    var task: Int64?

    init(_ p: VerbLine.Parsed) throws(VerbLine.Stop) {
        global = GlobalOptions(p)
        json = p.flag("json")
        app = p.arguments.first
        if p.arguments.count > 1 {
            guard let n = Int64(p.arguments[1]) else { throw .usage("The value '\(p.arguments[1])' is invalid for '<task>'") }
            task = n
        }
    }

    func run() throws {
        let client = try global.connect()
        guard let app else {
            let (reply, sent) = try client.manager(.listContinuedTasks, reply: ManagerWire.ListContinuedTasksReply.self)
            let terminal = Terminal.current()
            if json { return Output.line(terminal.isTTY ? JSONText.pretty(.object(sent)) : JSONText.compact(.object(sent))) }
            if reply.tasks.isEmpty { return Output.line("No continued tasks.") }
            for t in reply.tasks {
                let progress = t.totalUnits.map { $0 > 0 ? "\(t.completedUnits * 100 / $0)% (\(t.completedUnits)/\($0))" : "\(t.completedUnits)" }
                    ?? "\(t.completedUnits) units"
                Output.line("\(t.taskId)  \(t.appId)  \(t.title)\(t.subtitle.map { " — \($0)" } ?? "")  \(progress)")
            }
            return
        }
        guard let task else { throw VerbLine.Stop.usage("give the task: bgtaskctl cancel APP TASK") }
        try client.manager(.cancelContinuedTask, ManagerWire.CancelContinuedTask(appId: app, taskId: TaskID(UInt64(clamping: task))))
    }
}
