import BGTaskCore
import BGTaskProtocol
import Testing
@testable import BGTaskDaemon

/// The core's errors as the wire names them (they moved out of the core, issue 13): every one is an
/// error the interface it is sent on declares, with the parameters the declaration gives it.
@Suite struct WireErrorTests {
    @Test func everyCoreErrorIsADeclaredErrorOfItsInterface() throws {
        for manager in [false, true] {
            let signature = try VarlinkInterfaceSignature(parsing: manager ? Interfaces.manager : Interfaces.app)
            for error in CoreError.allCases {
                let e = DaemonService.wireError(error, manager: manager, appId: "a", mode: "audio", state: "background")
                let prefix = signature.name + "."
                #expect(e.name.hasPrefix(prefix), "\(error)")
                let short = String(e.name.dropFirst(prefix.count))
                #expect(short.first?.isUppercase == true)
                let declared = try #require(signature.errors[short], "\(error) → \(e.name)")
                #expect(Set(e.parameters.keys) == Set(declared.map(\.name)), "\(e.name)")
            }
        }
        #expect(DaemonService.wireError(.modeNotDeclared, manager: false, appId: "a", mode: "audio", state: "").name
            == "io.bgtaskd.App.ModeNotDeclared")
    }

    @Test func everyRefreshRefusalIsADeclaredErrorOfItsInterface() throws {
        let app = try #require(AppID("org.example.Mail"))
        let refusals: [RefreshCallError] = [
            .noSuchApp(app), .notPermitted("x"), .modeNotDeclared(.fetch), .unavailable("low-power-mode"),
            .tooManyPendingTaskRequests(.refresh),
        ]
        for manager in [false, true] {
            let signature = try VarlinkInterfaceSignature(parsing: manager ? Interfaces.manager : Interfaces.app)
            for refusal in refusals {
                let e = RefreshController.wireError(refusal, manager: manager)
                let prefix = signature.name + "."
                #expect(e.name.hasPrefix(prefix), "\(refusal)")
                let declared = try #require(signature.errors[String(e.name.dropFirst(prefix.count))], "\(refusal) → \(e.name)")
                #expect(Set(e.parameters.keys) == Set(declared.map(\.name)), "\(e.name)")
            }
        }
        #expect(RefreshController.wireError(.tooManyPendingTaskRequests(.processing), manager: false)
            == AppError.tooManyPendingTaskRequests(kind: "processing").varlinkError)
    }
}
