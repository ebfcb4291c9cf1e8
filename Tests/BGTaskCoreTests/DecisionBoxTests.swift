import Foundation
import Testing
@testable import BGTaskCore
import BGTaskModel

/// `Decision` keeps its fields in one copy-on-write box: it must behave exactly as the plain struct did.
@Suite struct DecisionBoxTests {
    func decision(scene: SceneID? = nil) -> Decision {
        var d = Decision(
            kind: .suspend, reason: .noAssertions, app: mail, state: .suspended, previousState: .background,
            taskID: TaskID(7), taskName: "sync", remaining: .seconds(3), pid: 42, detail: .suspended)
        d.scene = scene
        return d
    }

    @Test func aChangedCopyLeavesTheOriginalAlone() {
        let original = decision()
        var copy = original
        #expect(copy == original && copy.hashValue == original.hashValue)
        copy.scene = SceneID("main")!
        copy.severity = .warning
        copy.taskName = nil
        #expect(original.scene == nil && original.severity == .info && original.taskName == "sync")
        #expect(copy.scene == SceneID("main")! && copy.severity == .warning && copy.taskName == nil)
        #expect(copy != original)
        #expect(copy == decision(scene: SceneID("main")!).withSeverity(.warning).withoutTaskName())
    }

    /// Equal decisions built apart are equal and hash alike (not only copies sharing a box).
    @Test func equalityAndHashAreTheFields() {
        #expect(decision() == decision() && decision().hashValue == decision().hashValue)
        #expect(Set([decision(), decision(), decision(scene: SceneID("a")!)]).count == 2)
    }

    /// Encoded as the struct's synthesized conformance did: one object, the fields' names as keys, `nil`
    /// fields left out; and decoded back equal.
    @Test func codableIsTheStructs() throws {
        let data = try JSONEncoder().encode(decision())
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(Set(object.keys) == ["kind", "reason", "app", "state", "previousState", "taskID", "taskName",
                                     "remaining", "pid", "severity", "detail"])
        #expect(try JSONDecoder().decode(Decision.self, from: data) == decision())
        let withScene = decision(scene: SceneID("main")!)
        #expect(try JSONDecoder().decode(Decision.self, from: JSONEncoder().encode(withScene)) == withScene)
    }

    @Test func printsAsTheStructDid() {
        let text = String(describing: decision())
        #expect(text.hasPrefix("Decision(kind: BGTaskModel.DecisionKind.suspend, reason: "), "\(text)")
        #expect(text.contains("taskName: Optional(\"sync\")"), "\(text)")
    }
}

extension Decision {
    fileprivate func withSeverity(_ s: Severity) -> Decision {
        var d = self
        d.severity = s
        return d
    }

    fileprivate func withoutTaskName() -> Decision {
        var d = self
        d.taskName = nil
        return d
    }
}
