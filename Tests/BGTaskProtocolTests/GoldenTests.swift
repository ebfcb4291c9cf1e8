import BGTaskModel
import Testing
@testable import BGTaskProtocol

/// issue 13: for each method, the exact bytes of a call and of its reply, and of each error, decoded
/// back to the struct they came from.
@Suite struct GoldenTests {
    /// Methods a golden pair has been checked for.
    final class Seen: @unchecked Sendable { var names: Set<String> = [] }

    static func pair<P: WireMessage, R: WireMessage>(
        _ seen: Seen, _ method: some WireMethod, _ parameters: P, more: Bool = false, _ call: String, _ reply: R,
        continues: Bool = false, _ replyText: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        seen.names.insert(method.qualifiedName)
        #expect(ObjectIdentifier(method.parametersType) == ObjectIdentifier(P.self), sourceLocation: sourceLocation)
        #expect(ObjectIdentifier(method.replyType) == ObjectIdentifier(R.self), sourceLocation: sourceLocation)
        let callBytes = VarlinkCall(method, parameters, more: more).encoded()
        #expect(String(decoding: callBytes.dropLast(), as: UTF8.self) == call, sourceLocation: sourceLocation)
        #expect(callBytes.last == 0, sourceLocation: sourceLocation)
        let decodedCall = try VarlinkCall.decode(Array(call.utf8))
        #expect(decodedCall.method == method.qualifiedName, sourceLocation: sourceLocation)
        #expect(try decodedCall.decode(P.self) == parameters, sourceLocation: sourceLocation)
        let replyBytes = VarlinkReply(reply, continues: continues).encoded()
        #expect(String(decoding: replyBytes.dropLast(), as: UTF8.self) == replyText, sourceLocation: sourceLocation)
        let decodedReply = try VarlinkReply.decode(Array(replyText.utf8))
        #expect(decodedReply.continues == continues, sourceLocation: sourceLocation)
        #expect(try decodedReply.decode(R.self) == reply, sourceLocation: sourceLocation)
    }

    static let app = "org.example.Mail"
    static let none = WireEmpty()

    @Test func appCallsAndReplies() throws {
        let s = Seen()
        let a = Self.app
        let p = #"{"method":"io.bgtaskd.App."#
        let event = AppWire.Event(
            id: 4, kind: .performTask, state: .background, needsAck: false, taskId: 9, taskName: "sync", identifier: "org.example.Mail.fetch",
            name: "n", payload: ["k": "v"], launchReason: .backgroundTask, deadlineUSec: 1_000_000)
        try Self.pair(s, AppMethod.checkIn, AppWire.CheckIn(appId: a), more: true,
            p + #"CheckIn","more":true,"parameters":{"appId":"org.example.Mail"}}"#,
            AppWire.CheckInReply(state: .background, refreshStatus: nil, event: event), continues: true,
            #"{"continues":true,"parameters":{"event":{"deadlineUSec":1000000,"id":4,"identifier":"org.example.Mail.fetch","kind":"perform-task","launchReason":"background-task","name":"n","needsAck":false,"payload":{"k":"v"},"state":"background","taskId":9,"taskName":"sync"},"state":"background"}}"#)
        try Self.pair(s, AppMethod.checkIn, AppWire.CheckIn(appId: a), more: true,
            p + #"CheckIn","more":true,"parameters":{"appId":"org.example.Mail"}}"#,
            AppWire.CheckInReply(state: .active, refreshStatus: .available, event: nil), continues: true,
            #"{"continues":true,"parameters":{"refreshStatus":"available","state":"active"}}"#)
        try Self.pair(s, AppMethod.acknowledge, AppWire.Acknowledge(eventId: 12),
            p + #"Acknowledge","parameters":{"eventId":12}}"#, Self.none, #"{"parameters":{}}"#)
        try Self.pair(s, AppMethod.beginBackgroundTask, AppWire.BeginBackgroundTask(appId: a, name: "upload \"x\""),
            p + #"BeginBackgroundTask","parameters":{"appId":"org.example.Mail","name":"upload \"x\""}}"#,
            AppWire.BeginBackgroundTaskReply(taskId: 42), #"{"parameters":{"taskId":42}}"#)
        try Self.pair(s, AppMethod.beginBackgroundTask, AppWire.BeginBackgroundTask(appId: a),
            p + #"BeginBackgroundTask","parameters":{"appId":"org.example.Mail"}}"#,
            AppWire.BeginBackgroundTaskReply(taskId: 0), #"{"parameters":{"taskId":0}}"#)
        try Self.pair(s, AppMethod.endBackgroundTask, AppWire.EndBackgroundTask(appId: a, taskId: 42),
            p + #"EndBackgroundTask","parameters":{"appId":"org.example.Mail","taskId":42}}"#, Self.none, #"{"parameters":{}}"#)
        try Self.pair(s, AppMethod.backgroundTimeRemaining, AppWire.BackgroundTimeRemaining(appId: a),
            p + #"BackgroundTimeRemaining","parameters":{"appId":"org.example.Mail"}}"#,
            AppWire.BackgroundTimeRemainingReply(remainingUSec: nil), #"{"parameters":{"remainingUSec":null}}"#)
        try Self.pair(s, AppMethod.beginActivity, AppWire.BeginActivity(appId: a, mode: .externalAccessory),
            p + #"BeginActivity","parameters":{"appId":"org.example.Mail","mode":"external-accessory"}}"#,
            AppWire.BeginActivityReply(activityId: 3), #"{"parameters":{"activityId":3}}"#)
        try Self.pair(s, AppMethod.endActivity, AppWire.EndActivity(appId: a, activityId: 3),
            p + #"EndActivity","parameters":{"activityId":3,"appId":"org.example.Mail"}}"#, Self.none, #"{"parameters":{}}"#)
        try Self.pair(s, AppMethod.submitTaskRequest,
            AppWire.SubmitTaskRequest(appId: a, identifier: "org.example.Mail.clean", kind: .processing, earliestBeginUSec: 5,
                                      requiresNetwork: true, requiresExternalPower: false),
            p + #"SubmitTaskRequest","parameters":{"appId":"org.example.Mail","earliestBeginUSec":5,"identifier":"org.example.Mail.clean","kind":"processing","requiresExternalPower":false,"requiresNetwork":true}}"#,
            Self.none, #"{"parameters":{}}"#)
        try Self.pair(s, AppMethod.cancelTaskRequest, AppWire.CancelTaskRequest(appId: a, identifier: "x"),
            p + #"CancelTaskRequest","parameters":{"appId":"org.example.Mail","identifier":"x"}}"#, Self.none, #"{"parameters":{}}"#)
        try Self.pair(s, AppMethod.cancelAllTaskRequests, AppWire.CancelAllTaskRequests(appId: a),
            p + #"CancelAllTaskRequests","parameters":{"appId":"org.example.Mail"}}"#, Self.none, #"{"parameters":{}}"#)
        try Self.pair(s, AppMethod.pendingTaskRequests, AppWire.PendingTaskRequests(appId: a),
            p + #"PendingTaskRequests","parameters":{"appId":"org.example.Mail"}}"#,
            AppWire.PendingTaskRequestsReply(requests: [
                AppWire.TaskRequest(identifier: "r", kind: .refresh, earliestBeginUSec: nil, requiresNetwork: false, requiresExternalPower: false)
            ]),
            #"{"parameters":{"requests":[{"identifier":"r","kind":"refresh","requiresExternalPower":false,"requiresNetwork":false}]}}"#)
        try Self.pair(s, AppMethod.completeTask, AppWire.CompleteTask(appId: a, identifier: "r", success: true),
            p + #"CompleteTask","parameters":{"appId":"org.example.Mail","identifier":"r","success":true}}"#, Self.none, #"{"parameters":{}}"#)
        try Self.pair(s, AppMethod.refreshStatus, AppWire.RefreshStatusCall(appId: a),
            p + #"RefreshStatus","parameters":{"appId":"org.example.Mail"}}"#,
            AppWire.RefreshStatusReply(status: .denied), #"{"parameters":{"status":"denied"}}"#)
        // SPEC §16: continued tasks.
        try Self.pair(s, AppMethod.beginContinuedTask,
            AppWire.BeginContinuedTask(appId: a, identifier: "export", title: "Exporting", totalUnits: 100),
            p + #"BeginContinuedTask","parameters":{"appId":"org.example.Mail","identifier":"export","title":"Exporting","totalUnits":100}}"#,
            AppWire.BeginContinuedTaskReply(taskId: 12), #"{"parameters":{"taskId":12}}"#)
        try Self.pair(s, AppMethod.updateTaskProgress,
            AppWire.UpdateTaskProgress(appId: a, taskId: 12, completedUnits: 40, subtitle: "clip 2"),
            p + #"UpdateTaskProgress","parameters":{"appId":"org.example.Mail","completedUnits":40,"subtitle":"clip 2","taskId":12}}"#,
            Self.none, #"{"parameters":{}}"#)
        #expect(s.names == Set(AppMethod.allCases.map(\.qualifiedName)))
    }

    @Test func managerCallsAndReplies() throws {
        let s = Seen()
        let a = Self.app
        let p = #"{"method":"io.bgtaskd.Manager."#
        let decision = ManagerWire.Decision(realtimeUSec: 17, appId: a, decision: .grant, reason: .appRequest, message: "granted")
        let decisionText = #"{"appId":"org.example.Mail","decision":"grant","message":"granted","realtimeUSec":17,"reason":"app-request"}"#
        let assertion = ManagerWire.Assertion(taskId: 2, appId: a, name: nil, remainingUSec: 30, expiring: false, managerHold: false)
        let assertionText = #"{"appId":"org.example.Mail","expiring":false,"managerHold":false,"name":null,"remainingUSec":30,"taskId":2}"#
        let info = ManagerWire.AppInfo(
            appId: a, name: "Mail", state: .background, pid: 99, uid: 1000, lifecycleAware: true, assertions: [assertion],
            activities: [ManagerWire.Activity(activityId: 1, appId: a, mode: .audio)], refreshSetting: true, refreshStatus: .available,
            backgroundTimeRemainingUSec: 30, pendingTaskRequests: 1, lastDecision: decision, refreshStatusReason: nil, lastForegroundUSec: 5)
        let infoText = #"{"activities":[{"activityId":1,"appId":"org.example.Mail","mode":"audio"}],"appId":"org.example.Mail","assertions":["#
            + assertionText + #"],"backgroundTimeRemainingUSec":30,"lastDecision":"# + decisionText
            + #","lastForegroundUSec":5,"lifecycleAware":true,"name":"Mail","pendingTaskRequests":1,"pid":99,"refreshSetting":"on","refreshStatus":"available","refreshStatusReason":null,"scenes":[],"state":"background","uid":1000}"#
        try Self.pair(s, ManagerMethod.listApps, Self.none, p + #"ListApps"}"#,
            ManagerWire.ListAppsReply(apps: [info]), #"{"parameters":{"apps":["# + infoText + "]}}")
        try Self.pair(s, ManagerMethod.getApp, ManagerWire.GetApp(appId: a), p + #"GetApp","parameters":{"appId":"org.example.Mail"}}"#,
            ManagerWire.GetAppReply(app: info), #"{"parameters":{"app":"# + infoText + "}}")
        try Self.pair(s, ManagerMethod.listAssertions, Self.none, p + #"ListAssertions"}"#,
            ManagerWire.ListAssertionsReply(assertions: [assertion]), #"{"parameters":{"assertions":["# + assertionText + "]}}")
        let settings = ManagerWire.Settings(
            backgroundAppRefresh: .on, lowPowerMode: false, onExternalPower: true, network: .unmetered, freezerBackend: "cgroup",
            socket: "/run/bgtaskd/socket", didEnterBackgroundTimeoutUSec: 1, backgroundTimeBudgetUSec: 2, expirationWarningUSec: 3,
            maxBackgroundTasksPerApp: 4, launchTimeoutUSec: 5, killTimeoutUSec: 6, freezerBackendReason: "r", dryRun: false)
        try Self.pair(s, ManagerMethod.getSettings, Self.none, p + #"GetSettings"}"#, ManagerWire.GetSettingsReply(settings: settings),
            #"{"parameters":{"settings":{"backgroundAppRefresh":"on","backgroundTimeBudgetUSec":2,"didEnterBackgroundTimeoutUSec":1,"dryRun":false,"expirationWarningUSec":3,"freezerBackend":"cgroup","freezerBackendReason":"r","killTimeoutUSec":6,"launchTimeoutUSec":5,"lowPowerMode":false,"maxBackgroundTasksPerApp":4,"network":"unmetered","onExternalPower":true,"socket":"/run/bgtaskd/socket"}}}"#)
        try Self.pair(s, ManagerMethod.explain, ManagerWire.ExplainCall(appId: a), p + #"Explain","parameters":{"appId":"org.example.Mail"}}"#,
            ManagerWire.ExplainReply(state: .suspended, reasons: [decision], causes: ["c"]),
            #"{"parameters":{"causes":["c"],"reasons":["# + decisionText + #"],"state":"suspended"}}"#)
        try Self.pair(s, ManagerMethod.monitor, Self.none, more: true, p + #"Monitor","more":true}"#,
            ManagerWire.MonitorReply(decision: decision), continues: true, #"{"continues":true,"parameters":{"decision":"# + decisionText + "}}")
        let stats = ManagerWire.DaemonStats(
            uptimeUSec: 1, apps: 2, connections: 3, calls: 4, decisions: 5, liveAssertions: 6, journalEntries: 7, journalDropped: 8,
            freezerBackend: "none", freezerBackendReason: "FreezerBackend=none", dryRun: true)
        try Self.pair(s, ManagerMethod.stats, Self.none, p + #"Stats"}"#, ManagerWire.StatsReply(stats: stats),
            #"{"parameters":{"stats":{"apps":2,"calls":4,"connections":3,"decisions":5,"dryRun":true,"freezerBackend":"none","freezerBackendReason":"FreezerBackend=none","journalDropped":8,"journalEntries":7,"liveAssertions":6,"uptimeUSec":1}}}"#)
        // issue 11: what the journal budget and the connection limits did; optional, so the reply above (an older
        // daemon's, without them) still decodes.
        let counted = ManagerWire.DaemonStats(
            uptimeUSec: 1, apps: 2, connections: 3, calls: 4, decisions: 5, liveAssertions: 6, journalEntries: 7, journalDropped: 8,
            freezerBackend: "none", freezerBackendReason: "FreezerBackend=none", dryRun: true, journalCoalesced: 9, journalSummaries: 10,
            connectionsRefused: 11, connectionsTimedOut: 12, connectionsOversized: 13, connectionsPaused: 14)
        try Self.pair(s, ManagerMethod.stats, Self.none, p + #"Stats"}"#, ManagerWire.StatsReply(stats: counted),
            #"{"parameters":{"stats":{"apps":2,"calls":4,"connections":3,"connectionsOversized":13,"connectionsPaused":14,"connectionsRefused":11,"connectionsTimedOut":12,"decisions":5,"dryRun":true,"freezerBackend":"none","freezerBackendReason":"FreezerBackend=none","journalCoalesced":9,"journalDropped":8,"journalEntries":7,"journalSummaries":10,"liveAssertions":6,"uptimeUSec":1}}}"#)
        let ok = #"{"parameters":{}}"#
        try Self.pair(s, ManagerMethod.launch, ManagerWire.Launch(appId: a, background: true),
            p + #"Launch","parameters":{"appId":"org.example.Mail","background":true}}"#, Self.none, ok)
        try Self.pair(s, ManagerMethod.foreground, ManagerWire.Foreground(appId: a, exclusive: false),
            p + #"Foreground","parameters":{"appId":"org.example.Mail","exclusive":false}}"#, Self.none, ok)
        try Self.pair(s, ManagerMethod.background, ManagerWire.BackgroundCall(appId: a),
            p + #"Background","parameters":{"appId":"org.example.Mail"}}"#, Self.none, ok)
        try Self.pair(s, ManagerMethod.setFocus, ManagerWire.SetFocus(appId: nil, reason: .screenLocked),
            p + #"SetFocus","parameters":{"appId":null,"reason":"screen-locked"}}"#, Self.none, ok)
        try Self.pair(s, ManagerMethod.interrupt, ManagerWire.Interrupt(appId: a),
            p + #"Interrupt","parameters":{"appId":"org.example.Mail"}}"#, Self.none, ok)
        try Self.pair(s, ManagerMethod.endInterruption, ManagerWire.EndInterruption(appId: a),
            p + #"EndInterruption","parameters":{"appId":"org.example.Mail"}}"#, Self.none, ok)
        try Self.pair(s, ManagerMethod.terminate, ManagerWire.Terminate(appId: a),
            p + #"Terminate","parameters":{"appId":"org.example.Mail"}}"#, Self.none, ok)
        try Self.pair(s, ManagerMethod.setRefreshPolicy, ManagerWire.SetRefreshPolicy(appId: a, enabled: false),
            p + #"SetRefreshPolicy","parameters":{"appId":"org.example.Mail","enabled":false}}"#, Self.none, ok)
        try Self.pair(s, ManagerMethod.setGlobalRefresh, ManagerWire.SetGlobalRefresh(mode: .unmetered),
            p + #"SetGlobalRefresh","parameters":{"mode":"unmetered"}}"#, Self.none, ok)
        try Self.pair(s, ManagerMethod.setLowPowerMode, ManagerWire.SetLowPowerMode(enabled: true),
            p + #"SetLowPowerMode","parameters":{"enabled":true}}"#, Self.none, ok)
        try Self.pair(s, ManagerMethod.setConditions, ManagerWire.SetConditions(onExternalPower: false, network: NetworkCondition.none),
            p + #"SetConditions","parameters":{"network":"none","onExternalPower":false}}"#, Self.none, ok)
        try Self.pair(s, ManagerMethod.postNotification, ManagerWire.PostNotification(name: "ping", appId: nil, payload: ["n": 1]),
            p + #"PostNotification","parameters":{"name":"ping","payload":{"n":1}}}"#, Self.none, ok)
        try Self.pair(s, ManagerMethod.wakeForRemoteNotification, ManagerWire.WakeForRemoteNotification(appId: a),
            p + #"WakeForRemoteNotification","parameters":{"appId":"org.example.Mail"}}"#, Self.none, ok)
        try Self.pair(s, ManagerMethod.runTaskNow, ManagerWire.RunTaskNow(appId: a, identifier: "t"),
            p + #"RunTaskNow","parameters":{"appId":"org.example.Mail","identifier":"t"}}"#, Self.none, ok)
        try Self.pair(s, ManagerMethod.wakeForBusCall, ManagerWire.WakeForBusCall(appId: a, sender: ":1.42", member: "Activate"),
            p + #"WakeForBusCall","parameters":{"appId":"org.example.Mail","member":"Activate","sender":":1.42"}}"#, Self.none, ok)
        try Self.pair(s, ManagerMethod.setSceneState,
            ManagerWire.SetSceneState(appId: a, sceneId: "toplevel-3", state: .foregroundInactive, title: "Inbox", reason: .compositorFocus),
            p + #"SetSceneState","parameters":{"appId":"org.example.Mail","reason":"compositor-focus","sceneId":"toplevel-3","state":"foreground-inactive","title":"Inbox"}}"#,
            Self.none, ok)
        try Self.pair(s, ManagerMethod.listContinuedTasks, Self.none, p + #"ListContinuedTasks"}"#,
            ManagerWire.ListContinuedTasksReply(tasks: [ManagerWire.ContinuedTask(
                taskId: 12, appId: a, identifier: "export", title: "Exporting", subtitle: nil, completedUnits: 40, totalUnits: 100)]),
            #"{"parameters":{"tasks":[{"appId":"org.example.Mail","completedUnits":40,"identifier":"export","subtitle":null,"taskId":12,"title":"Exporting","totalUnits":100}]}}"#)
        try Self.pair(s, ManagerMethod.cancelContinuedTask, ManagerWire.CancelContinuedTask(appId: a, taskId: 12),
            p + #"CancelContinuedTask","parameters":{"appId":"org.example.Mail","taskId":12}}"#, Self.none, ok)
        try Self.pair(s, ManagerMethod.reload, Self.none, p + #"Reload"}"#,
            ManagerWire.ReloadReply(applied: ["[Lifecycle] KillTimeoutSec=2s"], notApplied: []),
            #"{"parameters":{"applied":["[Lifecycle] KillTimeoutSec=2s"],"notApplied":[]}}"#)
        try Self.pair(s, ManagerMethod.hold, ManagerWire.Hold(appId: a, name: "debug"), more: true,
            p + #"Hold","more":true,"parameters":{"appId":"org.example.Mail","name":"debug"}}"#,
            ManagerWire.HoldReply(holdId: 8), continues: true, #"{"continues":true,"parameters":{"holdId":8}}"#)
        try Self.pair(s, ManagerMethod.getRecording, Self.none, more: true, p + #"GetRecording","more":true}"#,
            ManagerWire.GetRecordingReply(part: "{\"format\":"), continues: true,
            #"{"continues":true,"parameters":{"part":"{\"format\":"}}"#)
        #expect(s.names == Set(ManagerMethod.allCases.map(\.qualifiedName)))
    }

    @Test func serviceCallsAndReplies() throws {
        let s = Seen()
        let p = #"{"method":"org.varlink.service."#
        try Self.pair(s, ServiceMethod.getInfo, Self.none, p + #"GetInfo"}"#,
            ServiceWire.GetInfoReply(vendor: "v", product: "p", version: "1", url: "u", interfaces: ["a", "b"]),
            #"{"parameters":{"interfaces":["a","b"],"product":"p","url":"u","vendor":"v","version":"1"}}"#)
        try Self.pair(s, ServiceMethod.getInterfaceDescription, ServiceWire.GetInterfaceDescription(interface: "io.bgtaskd.App"),
            p + #"GetInterfaceDescription","parameters":{"interface":"io.bgtaskd.App"}}"#,
            ServiceWire.GetInterfaceDescriptionReply(description: "interface x\n"), #"{"parameters":{"description":"interface x\n"}}"#)
        #expect(s.names == Set(ServiceMethod.allCases.map(\.qualifiedName)))
    }

    static func error(_ e: VarlinkError, _ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> VarlinkError {
        let bytes = VarlinkReply.failure(e).encoded()
        #expect(String(decoding: bytes.dropLast(), as: UTF8.self) == text, sourceLocation: sourceLocation)
        let back = try VarlinkReply.decode(Array(text.utf8))
        return VarlinkError(back.error ?? "", back.parameters)
    }

    @Test func appErrors() throws {
        let cases: [(AppError, String)] = [
            (.noSuchApp(appId: "a"), #"{"error":"io.bgtaskd.App.NoSuchApp","parameters":{"appId":"a"}}"#),
            (.permissionDenied, #"{"error":"io.bgtaskd.App.PermissionDenied","parameters":{}}"#),
            (.notCheckedIn(appId: "a"), #"{"error":"io.bgtaskd.App.NotCheckedIn","parameters":{"appId":"a"}}"#),
            (.alreadyCheckedIn(appId: "a"), #"{"error":"io.bgtaskd.App.AlreadyCheckedIn","parameters":{"appId":"a"}}"#),
            (.noSuchEvent(eventId: 5), #"{"error":"io.bgtaskd.App.NoSuchEvent","parameters":{"eventId":5}}"#),
            (.notPermitted(identifier: "i"), #"{"error":"io.bgtaskd.App.NotPermitted","parameters":{"identifier":"i"}}"#),
            (.tooManyPendingTaskRequests(kind: "refresh"),
             #"{"error":"io.bgtaskd.App.TooManyPendingTaskRequests","parameters":{"kind":"refresh"}}"#),
            (.unavailable(reason: "low-power-mode"), #"{"error":"io.bgtaskd.App.Unavailable","parameters":{"reason":"low-power-mode"}}"#),
            (.modeNotDeclared(mode: "audio"), #"{"error":"io.bgtaskd.App.ModeNotDeclared","parameters":{"mode":"audio"}}"#),
            (.modeNotContinuous(mode: "fetch"), #"{"error":"io.bgtaskd.App.ModeNotContinuous","parameters":{"mode":"fetch"}}"#),
            (.invalidState(state: "suspended"), #"{"error":"io.bgtaskd.App.InvalidState","parameters":{"state":"suspended"}}"#),
        ]
        #expect(Set(cases.map(\.0.shortName)) == Set(AppError.declared.keys))
        for (e, text) in cases { #expect(AppError(try Self.error(e.varlinkError, text)) == e) }
        #expect(AppError(VarlinkError("io.bgtaskd.App.SomethingNew")) == nil)
        #expect(AppError(VarlinkError("io.bgtaskd.Manager.NoSuchApp")) == nil)
    }

    @Test func managerErrors() throws {
        let cases: [(ManagerError, String)] = [
            (.noSuchApp(appId: "a"), #"{"error":"io.bgtaskd.Manager.NoSuchApp","parameters":{"appId":"a"}}"#),
            (.permissionDenied, #"{"error":"io.bgtaskd.Manager.PermissionDenied","parameters":{}}"#),
            (.notPermitted(identifier: "i"), #"{"error":"io.bgtaskd.Manager.NotPermitted","parameters":{"identifier":"i"}}"#),
            (.unavailable(reason: "restricted"), #"{"error":"io.bgtaskd.Manager.Unavailable","parameters":{"reason":"restricted"}}"#),
            (.invalidState(state: "not-running"), #"{"error":"io.bgtaskd.Manager.InvalidState","parameters":{"state":"not-running"}}"#),
            (.alreadyCheckedIn(appId: "a"), #"{"error":"io.bgtaskd.Manager.AlreadyCheckedIn","parameters":{"appId":"a"}}"#),
            (.notCheckedIn(appId: "a"), #"{"error":"io.bgtaskd.Manager.NotCheckedIn","parameters":{"appId":"a"}}"#),
            (.modeNotDeclared(mode: "voip"), #"{"error":"io.bgtaskd.Manager.ModeNotDeclared","parameters":{"mode":"voip"}}"#),
            (.invalidConfiguration(message: "bad", file: "/etc/x.conf", line: 3, key: "K"),
             #"{"error":"io.bgtaskd.Manager.InvalidConfiguration","parameters":{"file":"/etc/x.conf","key":"K","line":3,"message":"bad"}}"#),
            (.invalidConfiguration(message: "bad", file: nil, line: nil, key: nil),
             #"{"error":"io.bgtaskd.Manager.InvalidConfiguration","parameters":{"message":"bad"}}"#),
            (.launchFailed(appId: "a", message: "m"), #"{"error":"io.bgtaskd.Manager.LaunchFailed","parameters":{"appId":"a","message":"m"}}"#),
            (.holdLost(appId: "a", reason: "app-exited", message: "m"),
             #"{"error":"io.bgtaskd.Manager.HoldLost","parameters":{"appId":"a","message":"m","reason":"app-exited"}}"#),
        ]
        #expect(Set(cases.map(\.0.shortName)) == Set(ManagerError.declared.keys))
        for (e, text) in cases { #expect(ManagerError(try Self.error(e.varlinkError, text)) == e) }
    }

    @Test func serviceErrors() throws {
        let cases: [(VarlinkError, String)] = [
            (.interfaceNotFound("x.y"), #"{"error":"org.varlink.service.InterfaceNotFound","parameters":{"interface":"x.y"}}"#),
            (.methodNotFound("x.y.Z"), #"{"error":"org.varlink.service.MethodNotFound","parameters":{"method":"x.y.Z"}}"#),
            (.methodNotImplemented("x.y.Z"), #"{"error":"org.varlink.service.MethodNotImplemented","parameters":{"method":"x.y.Z"}}"#),
            (.invalidParameter("appId"), #"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"appId"}}"#),
            (.permissionDenied, #"{"error":"org.varlink.service.PermissionDenied","parameters":{}}"#),
            (.expectedMore, #"{"error":"org.varlink.service.ExpectedMore","parameters":{}}"#),
        ]
        #expect(Set(cases.map { String($0.0.name.split(separator: ".").last ?? "") }) == Set(ServiceWire.declaredErrors.keys))
        for (e, text) in cases {
            let back = try Self.error(e, text)
            #expect(back == e)
            #expect(ServiceError(back)?.varlinkError == e)
        }
    }
}
