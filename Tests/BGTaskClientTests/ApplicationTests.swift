import BGTaskProtocol
import Dispatch
import Synchronization
import Testing

@testable import BGTaskClientCore

/// Records what the application object told its delegate, and does what the test asks in each method.
@MainActor
final class RecordingDelegate: BGApplicationDelegate {
    var log: [String] = [] {
        didSet { TestChanges.announce() }
    }
    var onDidEnterBackground: ((BGApplication) -> Void)?
    var onNotification: ((BGApplication) -> Void)?

    func applicationDidCheckIn(_ application: BGApplication) { log.append("checked-in") }
    func application(_ application: BGApplication, connectionDidFail error: BGTaskClientError) { log.append("failed \(error.name)") }
    func applicationDidFinishLaunching(_ application: BGApplication, launchReason: LaunchReason) {
        log.append("launched \(launchReason.rawValue) \(application.applicationState.rawValue)")
    }
    func applicationDidBecomeActive(_ application: BGApplication) { log.append("active \(application.applicationState.rawValue)") }
    func applicationWillResignActive(_ application: BGApplication) { log.append("resign \(application.applicationState.rawValue)") }
    func applicationWillEnterForeground(_ application: BGApplication) { log.append("foreground") }
    func applicationDidEnterBackground(_ application: BGApplication) {
        log.append("background \(application.applicationState.rawValue)")
        onDidEnterBackground?(application)
    }
    func application(_ application: BGApplication, didReceiveNotification name: String, payload: JSON?) {
        log.append("notification \(name) \(payload?.serialized() ?? "nil")")
        onNotification?(application)
    }
    func applicationDidReceiveMemoryWarning(_ application: BGApplication) { log.append("memory-warning") }
    /// Every event, after the application applied its state: a test waiting on that state wakes here.
    func application(_ application: BGApplication, didReceive event: BGApplicationEvent) { TestChanges.announce() }
}

@MainActor
@Suite(.serialized) struct ApplicationTests {
    let dir: String
    let daemon: FakeDaemon
    let app: BGApplication
    let delegate = RecordingDelegate()

    init() throws {
        dir = try FakeVarlinkServer.temporaryDirectory()
        daemon = try FakeDaemon(path: dir + "/s")
        app = BGApplication(
            appID: "org.example.Mail", socketPath: daemon.server.path, backoff: Backoff(initial: 0.01, maximum: 0.05),
            registersAsShared: false)
        app.delegate = delegate
        app.exitsOnTerminate = false
    }

    func checkIn() async {
        app.start()
        #expect(await eventually { delegate.log.contains("checked-in") })
    }

    func stop() {
        app.stop()
        daemon.server.stop()
    }

    @Test func eventsReachTheDelegateInOrderWithTheirStates() async throws {
        defer { stop() }
        await checkIn()
        daemon.push(["id": 1, "kind": "did-finish-launching", "state": "inactive", "needsAck": false, "launchReason": "user"], state: "inactive")
        daemon.push(["id": 2, "kind": "did-become-active", "state": "active", "needsAck": false], state: "active")
        daemon.push(["id": 3, "kind": "will-resign-active", "state": "inactive", "needsAck": false], state: "inactive")
        daemon.push(["id": 4, "kind": "notification", "state": "inactive", "needsAck": false, "name": "news", "payload": ["n": 1]], state: "inactive")
        daemon.push(["id": 5, "kind": "memory-warning", "state": "inactive", "needsAck": false], state: "inactive")
        #expect(await eventually { delegate.log.count == 6 })
        #expect(delegate.log == [
            "checked-in", "launched user inactive", "active active", "resign inactive", #"notification news {"n":1}"#, "memory-warning",
        ])
        #expect(app.applicationState == .inactive)
        #expect(app.isCheckedIn)
        #expect(daemon.calls("Acknowledge").isEmpty)
    }

    @Test func didEnterBackgroundIsAcknowledgedWhenTheDelegateReturns() async throws {
        defer { stop() }
        await checkIn()
        let server = daemon.server
        delegate.onDidEnterBackground = { application in
            // Still inside the method: nothing acknowledged yet, and a task begun here comes first.
            #expect(server.calls.allSatisfy { $0.methodName != "Acknowledge" })
            #expect(application.beginBackgroundTask(withName: "sync") != .invalid)
        }
        daemon.push(["id": 7, "kind": "did-enter-background", "state": "background", "needsAck": true])
        #expect(await eventually { daemon.calls("Acknowledge").count == 1 })
        let methods = daemon.server.calls.map(\.methodName).filter { $0 != "CheckIn" }
        #expect(methods == ["BeginBackgroundTask", "Acknowledge"])
        #expect(daemon.calls("Acknowledge").first?.parameters == ["eventId": 7])
        #expect(daemon.calls("BeginBackgroundTask").first?.parameters == ["appId": "org.example.Mail", "name": "sync"])
        #expect(app.applicationState == .background)
    }

    @Test func aDeferredAcknowledgementIsSentOnlyWhenTheAppSaysSo() async throws {
        defer { stop() }
        await checkIn()
        let held = Mutex<BGEventAcknowledgement?>(nil)
        delegate.onDidEnterBackground = { application in
            let acknowledgement = application.deferAcknowledgement()
            held.withLock { $0 = acknowledgement }
        }
        delegate.onNotification = { [delegate] application in
            // Notification "x" needs no acknowledgement, so there is none to defer (the barriers below
            // do need one; they must not be deferred here).
            if delegate.log.last?.hasPrefix("notification x ") == true {
                #expect(application.deferAcknowledgement() == nil)
            }
        }
        daemon.push(["id": 8, "kind": "did-enter-background", "state": "background", "needsAck": true])
        daemon.push(["id": 9, "kind": "notification", "state": "background", "needsAck": false, "name": "x"])
        #expect(await eventually { delegate.log.count == 3 })
        // Barrier instead of a wait: event 10 is acknowledged when its delegate method returns; events are
        // handled and acknowledged in order on one connection, so an acknowledgement of 8 sent too early
        // would have arrived before 10's.
        daemon.push(["id": 10, "kind": "notification", "state": "background", "needsAck": true, "name": "barrier"])
        #expect(await eventually { daemon.calls("Acknowledge").count == 1 })
        #expect(daemon.calls("Acknowledge").map(\.parameters) == [["eventId": 10]])
        #expect(app.deferAcknowledgement() == nil)  // outside a delegate method
        let acknowledgement = try #require(held.withLock { $0 })
        #expect(acknowledgement.eventID == 8)
        acknowledgement.acknowledge()
        acknowledgement.acknowledge()
        // The same barrier after the second acknowledge(): a duplicate would come before 12's.
        daemon.push(["id": 12, "kind": "notification", "state": "background", "needsAck": true, "name": "barrier"])
        #expect(await eventually { daemon.calls("Acknowledge").count == 3 })
        #expect(daemon.calls("Acknowledge").map(\.parameters) == [["eventId": 10], ["eventId": 8], ["eventId": 12]])
    }

    @Test func aRemoteNotificationWakeIsAcknowledgedWhenTheDelegateReturns() async throws {
        defer { stop() }
        await checkIn()
        daemon.push(["id": 11, "kind": "notification", "state": "background", "needsAck": true, "name": "remote-notification", "payload": ["a": "b"]])
        #expect(await eventually { daemon.calls("Acknowledge").count == 1 })
        #expect(daemon.calls("Acknowledge").first?.parameters == ["eventId": 11])
        #expect(delegate.log.last == #"notification remote-notification {"a":"b"}"#)
    }

    @Test func expirationRunsTheTasksHandlerAndEndingTwiceSendsOnce() async throws {
        defer { stop() }
        await checkIn()
        let expired = Recorder<BackgroundTaskIdentifier>()
        let first = app.beginBackgroundTask(withName: "one") { [app] id in
            expired.append(id)
            app.endBackgroundTask(id)
        }
        let second = app.beginBackgroundTask(withName: "two")
        #expect(first == BackgroundTaskIdentifier(rawValue: 1))
        #expect(second == BackgroundTaskIdentifier(rawValue: 2))
        daemon.push(["id": 12, "kind": "background-task-will-expire", "state": "background", "needsAck": false, "taskId": 1, "taskName": "one"])
        #expect(await eventually { expired.count == 1 })
        #expect(expired.all == [first])
        #expect(await eventually { daemon.calls("EndBackgroundTask").count == 1 })
        app.endBackgroundTask(first)  // again: stays local
        app.endBackgroundTask(.invalid)
        app.endBackgroundTask(second)
        #expect(daemon.calls("EndBackgroundTask").map { $0.parameters["taskId"] } == [1, 2])
    }

    @Test func anExpirationThatOvertakesTheBeginReplyStillRuns() async throws {
        defer { stop() }
        await checkIn()
        // The event for task 1 arrives before anything began task 1.
        daemon.push(["id": 13, "kind": "background-task-will-expire", "state": "background", "needsAck": false, "taskId": 1])
        #expect(await eventually { app.lifecycleState == .background })
        let expired = Recorder<BackgroundTaskIdentifier>()
        let id = app.beginBackgroundTask(withName: "late") { expired.append($0) }
        #expect(await eventually { expired.count == 1 })
        #expect(expired.all == [id])
    }

    @Test func withBackgroundTaskBeginsAndEnds() async throws {
        defer { stop() }
        await checkIn()
        let value = await app.withBackgroundTask(named: "work") { () async -> Int in
            #expect(daemon.calls("BeginBackgroundTask").count == 1)
            #expect(daemon.calls("EndBackgroundTask").isEmpty)
            return 42
        }
        #expect(value == 42)
        #expect(daemon.calls("EndBackgroundTask").first?.parameters == ["appId": "org.example.Mail", "taskId": 1])
        struct Failure: Error {}
        await #expect(throws: Failure.self) {
            try await app.withBackgroundTask { () async throws -> Void in throw Failure() }
        }
        #expect(daemon.calls("EndBackgroundTask").count == 2)
    }

    @Test func timeRemainingIsInSeconds() async throws {
        defer { stop() }
        #expect(app.backgroundTimeRemaining == 2.5)
        #expect(daemon.calls("BackgroundTimeRemaining").first?.parameters == ["appId": "org.example.Mail"])
    }

    @Test func lostConnectionDropsTasksAndChecksInAgain() async throws {
        defer { stop() }
        await checkIn()
        let expired = Recorder<BackgroundTaskIdentifier>()
        let old = app.beginBackgroundTask(withName: "old") { expired.append($0) }
        #expect(old != .invalid)
        daemon.streams.all[0].close()
        #expect(await eventually { delegate.log.filter { $0 == "checked-in" }.count == 2 })
        #expect(delegate.log.contains("failed disconnected"))
        // The old task went with the old connection: ending it sends nothing; its expiration never runs.
        app.endBackgroundTask(old)
        #expect(daemon.calls("EndBackgroundTask").isEmpty)
        daemon.push(["id": 14, "kind": "background-task-will-expire", "state": "background", "needsAck": false, "taskId": 1], stream: 2)
        // Barrier: events on the stream are handled in order, so once the next one has reached the
        // delegate, the expiration was handled too (and must not have run the old task's handler).
        daemon.push(["id": 15, "kind": "notification", "state": "background", "needsAck": false, "name": "barrier"], stream: 2)
        #expect(await eventually { delegate.log.contains { $0.hasPrefix("notification barrier") } })
        #expect(expired.count == 0)
        // The call connection was replaced too.
        let fresh = app.beginBackgroundTask(withName: "new")
        #expect(fresh == BackgroundTaskIdentifier(rawValue: 2))
        let connections = Set(daemon.server.callsWithConnection.filter { $0.call.methodName == "BeginBackgroundTask" }.map(\.connection))
        #expect(connections.count == 2)
    }

    @Test func scheduledTasksRunTheirLaunchHandlerAndComplete() async throws {
        defer { stop() }
        let ran = Recorder<String>()
        let queue = DispatchQueue(label: "tasks")
        #expect(app.taskScheduler.register(forTaskWithIdentifier: "org.example.Mail.refresh", using: queue) { task in
            ran.append(task.identifier)
            task.expirationHandler = { ran.append("expired") }
        })
        #expect(!app.taskScheduler.register(forTaskWithIdentifier: "org.example.Mail.refresh") { _ in })
        await checkIn()
        daemon.push(["id": 20, "kind": "perform-task", "state": "background", "needsAck": false, "identifier": "org.example.Mail.refresh"])
        #expect(await eventually { ran.count == 1 })
        daemon.push(["id": 21, "kind": "background-task-will-expire", "state": "background", "needsAck": false, "identifier": "org.example.Mail.refresh"])
        #expect(await eventually { ran.count == 2 })
        #expect(ran.all == ["org.example.Mail.refresh", "expired"])
        // Unregistered identifiers are completed as failed at once.
        daemon.push(["id": 22, "kind": "perform-task", "state": "background", "needsAck": false, "identifier": "unknown"])
        #expect(await eventually { daemon.calls("CompleteTask").count == 1 })
        #expect(daemon.calls("CompleteTask").first?.parameters == ["appId": "org.example.Mail", "identifier": "unknown", "success": false])
    }

    @Test func setTaskCompletedSendsCompleteTaskOnce() async throws {
        defer { stop() }
        app.taskScheduler.register(forTaskWithIdentifier: "t") { task in
            task.setTaskCompleted(success: true)
            task.setTaskCompleted(success: false)
        }
        await checkIn()
        daemon.push(["id": 23, "kind": "perform-task", "state": "background", "needsAck": false, "identifier": "t"])
        #expect(await eventually { daemon.calls("CompleteTask").count == 1 })
        // Barrier: an unregistered task is completed (as failed) when its event is handled, after the
        // launch handler of "t" returned; a second CompleteTask for "t" would have come before it.
        daemon.push(["id": 24, "kind": "perform-task", "state": "background", "needsAck": false, "identifier": "unknown"])
        #expect(await eventually { daemon.calls("CompleteTask").count == 2 })
        #expect(daemon.calls("CompleteTask").map(\.parameters) == [
            ["appId": "org.example.Mail", "identifier": "t", "success": true],
            ["appId": "org.example.Mail", "identifier": "unknown", "success": false],
        ])
    }

    @Test func submitErrorsAreTyped() throws {
        defer { stop() }
        let scheduler = app.taskScheduler
        try scheduler.submit(BGAppRefreshTaskRequest(identifier: "org.example.Mail.refresh"))
        #expect(throws: BGTaskSchedulerError.notPermitted) { try scheduler.submit(BGAppRefreshTaskRequest(identifier: "bad")) }
        #expect(throws: BGTaskSchedulerError.tooManyPendingTaskRequests) {
            try scheduler.submit(BGProcessingTaskRequest(identifier: "second"))
        }
        let submitted = daemon.calls("SubmitTaskRequest").first?.parameters
        #expect(submitted == ["appId": "org.example.Mail", "identifier": "org.example.Mail.refresh", "kind": "refresh"])
        let pending = try scheduler.pendingTaskRequests()
        #expect(pending.map(\.identifier) == ["r"])
        scheduler.cancel(taskRequestWithIdentifier: "r")
        scheduler.cancelAllTaskRequests()
        #expect(daemon.calls("CancelTaskRequest").first?.parameters == ["appId": "org.example.Mail", "identifier": "r"])
        #expect(daemon.calls("CancelAllTaskRequests").count == 1)
    }

    @Test func refreshStatusComesFromTheStreamOnceCheckedIn() async throws {
        defer { stop() }
        await checkIn()
        #expect(app.backgroundRefreshStatus == .available)
        #expect(daemon.calls("RefreshStatus").isEmpty)
    }
}
