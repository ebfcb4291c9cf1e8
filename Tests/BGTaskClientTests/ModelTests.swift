import BGTaskProtocol
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

import BGTaskClient
@testable import BGTaskClientCore

@Suite struct EventParsingTests {
    @Test func fullEvent() throws {
        let json = try JSON.parse(
            #"""
            {"id": 7, "kind": "background-task-will-expire", "state": "background", "needsAck": false,
             "taskId": 12, "taskName": "sync", "identifier": null, "name": null, "payload": null,
             "launchReason": null, "deadlineUSec": 123456789}
            """#)
        let event = try BGApplicationEvent(json: json)
        #expect(event.id == 7)
        #expect(event.kind == .backgroundTaskWillExpire)
        #expect(event.state == .background)
        #expect(!event.needsAck)
        #expect(event.taskID == BackgroundTaskIdentifier(rawValue: 12))
        #expect(event.taskName == "sync")
        #expect(event.identifier == nil)
        #expect(event.payload == nil)
        #expect(event.deadlineUSec == 123_456_789)
    }

    @Test func notificationWithPayloadAndLaunchEvent() throws {
        let notification = try BGApplicationEvent(
            json: ["id": 3, "kind": "notification", "state": "background", "needsAck": true,
                   "name": "remote-notification", "payload": ["badge": 2]])
        #expect(notification.kind == .notification)
        #expect(notification.needsAck)
        #expect(notification.name == "remote-notification")
        #expect(notification.payload == ["badge": 2])

        let launch = try BGApplicationEvent(
            json: ["id": 1, "kind": "did-finish-launching", "state": "background", "needsAck": false,
                   "launchReason": "background-task"])
        #expect(launch.launchReason == .backgroundTask)

        let task = try BGApplicationEvent(
            json: ["id": 2, "kind": "perform-task", "state": "background", "needsAck": false,
                   "identifier": "org.example.Mail.refresh", "deadlineUSec": 5])
        #expect(task.kind == .performTask)
        #expect(task.identifier == "org.example.Mail.refresh")
    }

    @Test(arguments: BGApplicationEvent.Kind.all)
    func everyKindRoundTrips(kind: BGApplicationEvent.Kind) throws {
        let event = BGApplicationEvent(id: 9, kind: kind, state: .inactive, needsAck: kind == .didEnterBackground)
        #expect(try BGApplicationEvent(json: event.json) == event)
        #expect(event.json["kind"] == .string(kind.rawValue))
    }

    @Test func unknownValuesFromANewerDaemonAreKept() throws {
        let event = try BGApplicationEvent(json: ["id": 4, "kind": "did-something-new", "state": "hibernating", "launchReason": "alien"])
        #expect(event.kind.rawValue == "did-something-new")
        #expect(event.state == nil)
        #expect(event.launchReason == nil)
        #expect(!event.needsAck)
    }

    @Test(arguments: [
        JSON.array([]), ["kind": "notification"], ["id": "1", "kind": "notification"], ["id": 1], ["id": 1, "kind": ""],
    ])
    func malformedEventsAreRejected(json: JSON) {
        #expect(throws: BGTaskClientError.self) { try BGApplicationEvent(json: json) }
    }

    @Test func checkInReplies() throws {
        let first = try CheckInReply(parameters: ["state": "not-running", "refreshStatus": "available"])
        #expect(first == CheckInReply(state: .notRunning, refreshStatus: .available))
        let nullEvent = try CheckInReply(parameters: ["state": "active", "refreshStatus": "denied", "event": nil])
        #expect(nullEvent.event == nil)
        let withEvent = try CheckInReply(
            parameters: ["state": "active", "refreshStatus": "restricted",
                         "event": ["id": 2, "kind": "did-become-active", "state": "active", "needsAck": false]])
        #expect(withEvent.refreshStatus == .restricted)
        #expect(withEvent.event?.kind == .didBecomeActive)
        #expect(throws: BGTaskClientError.self) { try CheckInReply(parameters: ["event": ["id": 1]]) }
    }
}

@Suite struct ApplicationStateTests {
    func reply(_ kind: BGApplicationEvent.Kind, _ state: BGLifecycleState?, launch: LaunchReason? = nil) -> CheckInReply {
        CheckInReply(
            state: state, refreshStatus: .available,
            event: BGApplicationEvent(id: 1, kind: kind, state: state, launchReason: launch))
    }

    func run(_ replies: [CheckInReply]) -> [BGApplication.State] {
        var tracker = LifecycleTracker()
        return replies.map { tracker.apply($0); return tracker.applicationState }
    }

    @Test func launchToForegroundThenBackgroundAndBack() {
        // SPEC §2 sequences 1, 2, 3.
        let states = run([
            CheckInReply(state: .notRunning, refreshStatus: .available),
            reply(.didFinishLaunching, .inactive, launch: .user),
            reply(.didBecomeActive, .active),
            reply(.willResignActive, .inactive),
            reply(.didEnterBackground, .background),
            reply(.willEnterForeground, .inactive),
            reply(.didBecomeActive, .active),
        ])
        #expect(states == [.background, .inactive, .active, .inactive, .background, .inactive, .active])
    }

    @Test func launchIntoTheBackgroundForATask() {
        // SPEC §2 sequence 4.
        let states = run([
            CheckInReply(state: .notRunning, refreshStatus: .available),
            reply(.didFinishLaunching, .background, launch: .backgroundTask),
            reply(.didEnterBackground, .background),
            reply(.performTask, .background),
        ])
        #expect(states == [.background, .background, .background, .background])
    }

    @Test func interruption() {
        // SPEC §2 sequence 6.
        let states = run([
            CheckInReply(state: .active, refreshStatus: .available),
            reply(.willResignActive, .inactive),
            reply(.notification, .inactive),
            reply(.didBecomeActive, .active),
        ])
        #expect(states == [.active, .inactive, .inactive, .active])
    }

    /// When an event carries no state this library knows, its kind decides; kinds that do not move the
    /// app keep the state it had.
    @Test(arguments: [
        (BGApplicationEvent.Kind.didFinishLaunching, BGApplication.State.inactive),
        (.willEnterForeground, .inactive), (.didBecomeActive, .active), (.willResignActive, .inactive),
        (.didEnterBackground, .background), (.backgroundTaskWillExpire, .active), (.willTerminate, .active),
        (.performTask, .active), (.notification, .active), (.memoryWarning, .active),
    ])
    func stateImpliedByKind(kind: BGApplicationEvent.Kind, expected: BGApplication.State) {
        var tracker = LifecycleTracker()
        tracker.apply(CheckInReply(state: .active, refreshStatus: nil))
        tracker.apply(CheckInReply(state: nil, refreshStatus: nil, event: BGApplicationEvent(id: 1, kind: kind, state: nil)))
        #expect(tracker.applicationState == expected)
    }

    @Test func wireStatesMapToUIKitStates() {
        #expect(BGApplication.State(.active) == .active)
        #expect(BGApplication.State(.inactive) == .inactive)
        #expect(BGApplication.State(.background) == .background)
        #expect(BGApplication.State(.suspended) == .background)
        #expect(BGApplication.State(.notRunning) == nil)
    }

    @Test func refreshStatusFollowsEveryReply() {
        var tracker = LifecycleTracker()
        #expect(tracker.refreshStatus == nil)
        tracker.apply(CheckInReply(state: .active, refreshStatus: .available))
        #expect(tracker.refreshStatus == .available)
        tracker.apply(CheckInReply(
            state: .active, refreshStatus: .denied,
            event: BGApplicationEvent(id: 5, kind: .notification, state: .active, name: "refresh-status-changed")))
        #expect(tracker.refreshStatus == .denied)
        #expect(tracker.lifecycleState == .active)
    }
}

@Suite struct TimeRemainingTests {
    @Test func nullOrAbsentIsUnlimited() {
        #expect(secondsRemaining(fromUSec: nil) == .greatestFiniteMagnitude)
        let null = try? AppWire.BackgroundTimeRemainingReply(json: ["remainingUSec": .null])
        #expect(null != nil)
        #expect(secondsRemaining(fromUSec: null?.remainingUSec) == .greatestFiniteMagnitude)
    }

    @Test(arguments: [(Int64(0), 0.0), (1, 0.000001), (1_500_000, 1.5), (30_000_000, 30), (-5, 0)])
    func microsecondsBecomeSeconds(usec: Int64, seconds: Double) {
        #expect(secondsRemaining(fromUSec: usec) == seconds)
    }
}

@Suite struct ErrorMappingTests {
    @Test(arguments: [
        ("io.bgtaskd.App.NoSuchApp", ["appId": "a"], BGTaskClientError.noSuchApp("a")),
        ("io.bgtaskd.App.PermissionDenied", [:], .permissionDenied),
        ("io.bgtaskd.Manager.PermissionDenied", [:], .permissionDenied),
        ("org.varlink.service.PermissionDenied", [:], .permissionDenied),
        ("io.bgtaskd.App.NotCheckedIn", ["appId": "a"], .notCheckedIn("a")),
        ("io.bgtaskd.App.AlreadyCheckedIn", ["appId": "a"], .alreadyCheckedIn("a")),
        ("io.bgtaskd.App.NoSuchEvent", ["eventId": 4], .noSuchEvent(4)),
        ("io.bgtaskd.App.NotPermitted", ["identifier": "x"], .notPermitted("x")),
        ("io.bgtaskd.App.TooManyPendingTaskRequests", ["kind": "refresh"], .tooManyPendingTaskRequests(kind: "refresh")),
        ("io.bgtaskd.App.Unavailable", ["reason": "low-power-mode"], .unavailable(reason: "low-power-mode")),
        ("io.bgtaskd.App.ModeNotDeclared", ["mode": "audio"], .modeNotDeclared("audio")),
        ("io.bgtaskd.App.InvalidState", ["state": "suspended"], .invalidState("suspended")),
        ("org.varlink.service.InvalidParameter", ["parameter": "appId"], .invalidParameter("appId")),
        ("org.varlink.service.MethodNotImplemented", ["method": "M"], .notImplemented("M")),
        ("org.varlink.service.MethodNotFound", ["method": "M"], .notImplemented("M")),
        ("org.varlink.service.InterfaceNotFound", ["interface": "i"], .notImplemented("i")),
    ] as [(String, [String: JSON], BGTaskClientError)])
    func namedErrors(name: String, parameters: [String: JSON], expected: BGTaskClientError) {
        let error = BGTaskClientError(varlinkError: VarlinkError(name, parameters))
        #expect(error == expected)
        if case .notImplemented = error {} else { #expect(name.hasSuffix("." + error.name)) }
    }

    @Test func unknownNamesAreKeptWhole() {
        let foreign = VarlinkError("org.example.Other.Boom", ["x": 1])
        #expect(BGTaskClientError(varlinkError: foreign) == .remote(foreign))
        let newer = VarlinkError("io.bgtaskd.App.SomethingNew")
        #expect(BGTaskClientError(varlinkError: newer) == .remote(newer))
    }

    @Test func connectionErrors() {
        #expect(BGTaskClientError(VarlinkClientError.connect("x")) == .cannotConnect("x"))
        #expect(BGTaskClientError(VarlinkClientError.io("y")) == .disconnected("y"))
        #expect(BGTaskClientError(VarlinkClientError.remote(VarlinkError("io.bgtaskd.App.NoSuchApp"))) == .noSuchApp(""))
    }

    @Test func schedulerCodes() {
        #expect(BGTaskSchedulerError(.notPermitted("x")) == .notPermitted)
        #expect(BGTaskSchedulerError(.modeNotDeclared("fetch")) == .notPermitted)
        #expect(BGTaskSchedulerError(.tooManyPendingTaskRequests(kind: "processing")) == .tooManyPendingTaskRequests)
        #expect(BGTaskSchedulerError(.unavailable(reason: "refresh-disabled")) == .unavailable)
        #expect(BGTaskSchedulerError(.cannotConnect("x")) == .failed(.cannotConnect("x")))
    }
}

@Suite struct BackoffTests {
    @Test func doublesUpToTheCap() {
        let backoff = Backoff(initial: 0.1, maximum: 2)
        let delays = (0..<8).map { backoff.delay(attempt: $0) }
        #expect(delays[0] == 0.1)
        #expect(delays[1] == 0.2)
        #expect(abs(delays[4] - 1.6) < 1e-9)
        #expect(delays[5] == 2)
        #expect(delays[7] == 2)
        #expect(backoff.delay(attempt: Int.max) == 2)
    }
}

@Suite struct TaskRequestTests {
    @Test func submitParameters() {
        let refresh = BGAppRefreshTaskRequest(identifier: "org.example.Mail.refresh")
        #expect(refresh.parameters(appID: "a")?.json == ["appId": "a", "identifier": "org.example.Mail.refresh", "kind": "refresh"])
        refresh.earliestBeginDate = .init(timeIntervalSince1970: 1_700_000_000.25)
        #expect(refresh.parameters(appID: "a")?.json["earliestBeginUSec"] == .int(1_700_000_000_250_000))

        let processing = BGProcessingTaskRequest(identifier: "p")
        processing.requiresExternalPower = true
        #expect(processing.parameters(appID: "a")?.json == ["appId": "a", "identifier": "p", "kind": "processing", "requiresNetwork": false, "requiresExternalPower": true])
    }

    @Test func pendingRequestsAreRead() throws {
        let refresh = try #require(BGTaskRequest.make(from: ["identifier": "r", "kind": "refresh", "earliestBeginUSec": 2_000_000, "requiresNetwork": false, "requiresExternalPower": false]))
        #expect(refresh is BGAppRefreshTaskRequest)
        #expect(refresh.earliestBeginDate?.timeIntervalSince1970 == 2)
        let processing = try #require(BGTaskRequest.make(from: ["identifier": "p", "kind": "processing", "requiresNetwork": true, "requiresExternalPower": false]) as? BGProcessingTaskRequest)
        #expect(processing.requiresNetworkConnectivity)
        #expect(!processing.requiresExternalPower)
        #expect(BGTaskRequest.make(from: ["identifier": "x", "kind": "teleport"]) == nil)
    }
}
