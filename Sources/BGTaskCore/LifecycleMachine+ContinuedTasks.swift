/// SPEC §16: what `BeginContinuedTask` asks for.
public struct ContinuedTaskRequest: Hashable, Sendable, Codable {
    public var identifier: String
    public var title: String
    public var subtitle: String?
    public var totalUnits: Int64?

    public init(identifier: String, title: String, subtitle: String? = nil, totalUnits: Int64? = nil) {
        self.identifier = identifier
        self.title = title
        self.subtitle = subtitle
        self.totalUnits = totalUnits
    }
}

/// SPEC §16: what `UpdateTaskProgress` reports.
public struct TaskProgress: Hashable, Sendable, Codable {
    public var completedUnits: Int64
    public var totalUnits: Int64?
    public var subtitle: String?

    public init(completedUnits: Int64, totalUnits: Int64? = nil, subtitle: String? = nil) {
        self.completedUnits = completedUnits
        self.totalUnits = totalUnits
        self.subtitle = subtitle
    }
}

/// A live continued task (SPEC §16), as `ListContinuedTasks` shows it.
public struct ContinuedTask: Hashable, Sendable, Codable {
    public var taskID: TaskID
    public var app: AppID
    public var identifier: String
    public var title: String
    public var subtitle: String?
    public var completedUnits: Int64
    public var totalUnits: Int64?
    /// When it last reported progress (or began).
    public var lastProgress: Instant

    /// Its progress in [0, 1] (`nil`: no total known).
    public var fraction: Double? {
        guard let total = totalUnits, total > 0 else { return nil }
        return Swift.min(1, Swift.max(0, Double(completedUnits) / Double(total)))
    }
}

// SPEC §16: continued tasks (iOS 26 BGContinuedProcessingTask): begun by the user while the app is active,
// kept running in the background with no time budget for as long as they report progress.
extension LifecycleMachine {
    /// The live continued tasks, in the order they were begun.
    public var liveContinuedTasks: [ContinuedTask] { continuedTasks.values.sorted { $0.taskID < $1.taskID } }

    mutating func continuedTaskRequested(_ app: AppID, connection: ConnectionID, _ request: ContinuedTaskRequest) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        // User-initiated: only while the app is active.
        guard records[i].state == .active, records[i].termination == nil else {
            record(.deny, .invalidState, i, taskName: request.identifier, severity: .notice,
                   .assertionDenied(live: records[i].assertions.count))
            return refuseInState(i)
        }
        if records[i].assertions.count >= config.maxBackgroundTasksPerApp {
            record(.deny, .tooManyAssertions, i, taskName: request.identifier, severity: .notice,
                   .assertionDenied(live: records[i].assertions.count))
            return reply(.taskID(.invalid))
        }
        let task = TaskID(nextTaskNumber)
        nextTaskNumber += 1
        assertionTable.insert(
            AssertionRecord(
                id: task, app: records[i].id, connection: connection, name: request.identifier, begun: now, warned: false,
                continued: true))
        appendAssertion(task, to: i)
        connections.hold(task, on: connection)
        continuedTasks[task] = ContinuedTask(
            taskID: task, app: records[i].id, identifier: request.identifier, title: request.title,
            subtitle: request.subtitle, completedUnits: 0, totalUnits: request.totalUnits, lastProgress: now)
        deadlines.arm(.continuedStall(records[i].id, task), at: now + nonNegative(config.continuedTaskStall))
        record(.grant, .userRequest, i, taskID: task, taskName: request.identifier, .assertionGranted)
        reply(.taskID(task))
    }

    mutating func taskProgressReported(_ app: AppID, _ task: TaskID, _ progress: TaskProgress) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        guard var t = continuedTasks[task], t.app == app else { return refuseInState(i) }
        t.completedUnits = Swift.max(0, progress.completedUnits)
        if let total = progress.totalUnits { t.totalUnits = total }
        if let subtitle = progress.subtitle { t.subtitle = subtitle }
        t.lastProgress = now
        continuedTasks[task] = t
        deadlines.arm(.continuedStall(app, task), at: now + nonNegative(config.continuedTaskStall))
        emit(.progressReported(t))
        reply(.ok)
    }

    mutating func continuedTaskCancelled(_ app: AppID, _ task: TaskID) {
        guard let i = slots[app] else { return reply(.failure(.noSuchApp)) }
        guard let t = continuedTasks[task], t.app == app else { return refuseInState(i) }
        expireContinuedTask(i, t, reason: .userCancelled)
        reply(.ok)
        maybeSuspend(i)
    }

    mutating func continuedTaskStalled(_ i: Int, _ task: TaskID) {
        guard let t = continuedTasks[task], t.app == records[i].id else { return }
        expireContinuedTask(i, t, reason: .taskStalled)
        maybeSuspend(i)
    }

    /// The app's expiration handler runs (`background-task-will-expire`), and the task ends as an expired
    /// assertion: `expire` then `end`, with `reason`.
    mutating func expireContinuedTask(_ i: Int, _ t: ContinuedTask, reason: Reason) {
        deliver(i, .backgroundTaskWillExpire, taskID: t.taskID, taskName: t.identifier, deadline: now)
        record(.expire, reason, i, taskID: t.taskID, taskName: t.identifier, remaining: .zero, .assertionExpiring(in: .zero))
        releaseAssertion(t.taskID)
        record(.end, reason, i, taskID: t.taskID, taskName: t.identifier, remaining: remaining(i), .assertionEnded)
    }

    /// The task's assertion was released (ended, expired, its connection closed, its app gone).
    mutating func continuedTaskReleased(_ task: TaskID, app: AppID) {
        continuedTasks[task] = nil
        deadlines.cancel(.continuedStall(app, task))
    }
}

extension LifecycleMachine {
    /// Under memory pressure (SPEC §8, §16): up to `count` continued tasks are ended, the least progress
    /// first (a task with no total counts as none), each as an expired assertion (reason `memory-pressure`).
    /// Returns how many of `count` are left for terminating background apps.
    mutating func endContinuedTasksForMemory(count: Int) -> Int {
        guard count > 0 else { return 0 }
        let order = continuedTasks.values.sorted { ($0.fraction ?? 0, $0.taskID) < ($1.fraction ?? 0, $1.taskID) }
        var left = count
        for t in order.prefix(count) {
            guard let i = slots[t.app], records[i].termination == nil else { continue }
            expireContinuedTask(i, t, reason: .memoryPressure)
            maybeSuspend(i)
            left -= 1
        }
        return left
    }
}
