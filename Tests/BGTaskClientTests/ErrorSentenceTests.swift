import BGTaskModel
import BGTaskProtocol
import Testing

@testable import BGTaskClientCore

/// Every error the daemon can answer a Manager call with reads as a sentence that names the app (SPEC §12):
/// no reason, state or error is left as a bare code.
@Suite struct ErrorSentenceTests {
    static let app = "org.example.Mail"
    /// The control calls that name an app.
    static let appMethods: [ManagerMethod] = [
        .launch, .foreground, .background, .interrupt, .endInterruption, .terminate, .setRefreshPolicy,
        .wakeForRemoteNotification, .runTaskNow, .hold, .setFocus,
    ]
    /// Every reason an `Unavailable` can carry: each ``Reason``, and the refresh calls' own.
    static let unavailableReasons = Reason.allCases.map(\.rawValue)
        + ["no-pending-request", "state-not-saved", "too-many-pending-task-requests"]

    /// A code printed bare: the kebab-case value itself, or in parentheses.
    static func isBare(_ code: String, in sentence: String) -> Bool {
        sentence.contains("(\(code))") || sentence.contains("'\(code)'") || (code.contains("-") && sentence.contains(code))
    }

    @Test func theBriefsExample() {
        let e = ManagerError.unavailable(reason: Reason.lowPowerMode.rawValue).varlinkError
        #expect(ErrorSentences.sentence(for: e, method: .wakeForRemoteNotification, appId: Self.app)
            == "Cannot wake org.example.Mail: Low Power Mode is on; turn it off with 'bgtaskctl low-power off'")
    }

    @Test(arguments: unavailableReasons)
    func everyUnavailableReasonIsASentenceNamingTheApp(_ reason: String) throws {
        for method in Self.appMethods {
            let e = ManagerError.unavailable(reason: reason).varlinkError
            let text = try #require(ErrorSentences.sentence(for: e, method: method, appId: Self.app))
            #expect(text.hasPrefix("Cannot "), "\(method): \(text)")
            #expect(text.contains(Self.app), "\(method): \(text)")
            #expect(!Self.isBare(reason, in: text), "\(reason) is printed as a code: \(text)")
        }
    }

    @Test(arguments: AppState.allCases)
    func everyInvalidStateIsASentenceNamingTheApp(_ state: AppState) throws {
        for method in Self.appMethods {
            let e = ManagerError.invalidState(state: state.rawValue).varlinkError
            let text = try #require(ErrorSentences.sentence(for: e, method: method, appId: Self.app))
            #expect(text.hasPrefix("Cannot "), "\(text)")
            #expect(text.contains("\(Self.app) is "), "\(text)")
            #expect(!Self.isBare(state.rawValue, in: text), "\(state) is printed as a code: \(text)")
        }
    }

    @Test func aStoppedAppSaysHowToStartIt() {
        let e = ManagerError.invalidState(state: "not-running").varlinkError
        #expect(ErrorSentences.sentence(for: e, method: .background, appId: Self.app)
            == "Cannot move org.example.Mail to the background: org.example.Mail is not running; "
            + "start it with 'bgtaskctl launch org.example.Mail'")
    }

    /// One value of every error of both interfaces and of org.varlink.service: each has its sentence.
    static let everyError: [VarlinkError] = [
        ManagerError.noSuchApp(appId: app), .permissionDenied, .notPermitted(identifier: "x.y"),
        .unavailable(reason: "low-power-mode"), .invalidState(state: "suspended"), .alreadyCheckedIn(appId: app),
        .notCheckedIn(appId: app), .modeNotDeclared(mode: "audio"),
        .invalidConfiguration(message: "a.conf:3: Foo= unknown", file: "a.conf", line: 3, key: "Foo"),
        .launchFailed(appId: app, message: "/x: executable not found"),
        .holdLost(appId: app, reason: "memory-pressure", message: "terminated"),
    ].map(\.varlinkError) + [
        AppError.noSuchApp(appId: app), .permissionDenied, .notCheckedIn(appId: app), .alreadyCheckedIn(appId: app),
        .noSuchEvent(eventId: 3), .notPermitted(identifier: "x.y"), .tooManyPendingTaskRequests(kind: "refresh"),
        .unavailable(reason: "refresh-disabled"), .modeNotDeclared(mode: "audio"), .modeNotContinuous(mode: "fetch"),
        .invalidState(state: "not-running"),
    ].map(\.varlinkError) + [
        ServiceError.interfaceNotFound(interface: "x.y"), .methodNotFound(method: "x.y.Z"),
        .methodNotImplemented(method: "x.y.Z"), .invalidParameter(parameter: "appId"), .permissionDenied, .expectedMore,
    ].map(\.varlinkError)

    @Test func everyDeclaredErrorIsCovered() {
        let names = Set(Self.everyError.map(\.name))
        for short in ManagerError.declared.keys { #expect(names.contains(ManagerMethod.interface + "." + short), "\(short)") }
        for short in AppError.declared.keys { #expect(names.contains(AppMethod.interface + "." + short), "\(short)") }
    }

    @Test(arguments: everyError)
    func everyErrorIsASentence(_ e: VarlinkError) throws {
        let text = try #require(ErrorSentences.sentence(for: e, method: .terminate, appId: Self.app))
        #expect(text.split(separator: " ").count >= 4, "\(e.name): \(text)")
        #expect(text.contains(Self.app) || text.hasPrefix("Configuration"), "\(e.name): \(text)")
    }
}
