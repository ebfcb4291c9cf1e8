import ArgumentParser
import BGTaskModel
import BGTaskCtlKit
import BGTaskProtocol

/// SPEC §16: `bgtaskctl cancel APP TASK`: the user cancels a continued task (its expiration handler runs);
/// without arguments, the live continued tasks with their progress.
struct Cancel: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Cancel an app's continued task (CancelContinuedTask); without arguments, list the continued tasks (ListContinuedTasks)."
    )

    @OptionGroup var global: GlobalOptions
    @Flag(name: .long, help: "List as JSON (without arguments).") var json = false
    @Argument(help: "The app's ID.") var app: String?
    @Argument(help: "The continued task's identifier (taskId).") var task: Int64?

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
        guard let task else { throw ValidationError("give the task: bgtaskctl cancel APP TASK") }
        try client.manager(.cancelContinuedTask, ManagerWire.CancelContinuedTask(appId: app, taskId: TaskID(UInt64(clamping: task))))
    }
}
