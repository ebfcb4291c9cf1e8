import Testing

@testable import BGTaskCore

/// `Explain` lists causes only (StateCause): the table of every decision kind, and every reason.
@Suite struct StateCauseTests {
    static let table: [(DecisionKind, Bool)] = [
        (.launch, true), (.foreground, true), (.background, true), (.suspend, true), (.resume, true),
        (.terminate, true), (.grant, true), (.end, true), (.expire, true), (.runTask, true), (.completeTask, true),
        (.policy, true), (.deny, false), (.notify, false), (.coalesced, false),
    ]

    @Test func everyKindIsInTheTable() {
        #expect(Set(Self.table.map(\.0)) == Set(DecisionKind.allCases))
    }

    @Test(arguments: table)
    func aKindIsACauseForEveryReasonButAnUnknownIdentifier(_ kind: DecisionKind, _ cause: Bool) {
        for reason in Reason.allCases {
            #expect(StateCause.explains(kind, reason) == (cause && reason != .unknownIdentifier), "\(kind) \(reason)")
        }
    }

    @Test func theIssuesExamples() {
        // Another uid's refused CheckIn; a notification queued for a suspended app.
        #expect(!StateCause.explains(.deny, .permissionDenied))
        #expect(!StateCause.explains(.notify, .notificationQueued))
        // The suspension and what led to it.
        #expect(StateCause.explains(.suspend, .noAssertions))
        #expect(StateCause.explains(.background, .userRequest))
        #expect(StateCause.explains(.suspend, .didEnterBackgroundTimeout))
    }
}
