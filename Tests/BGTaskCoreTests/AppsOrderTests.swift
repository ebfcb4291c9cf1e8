import BGTaskCore
import Testing

/// `apps(now:)` (ListApps) is in app-ID order whatever the order of registration; registered in order
/// (start-up), the records are not sorted again.
@Suite struct AppsOrderTests {
    @Test func appsAreInIDOrderWhateverTheRegistrationOrder() throws {
        let ids = try ["org.b", "org.a", "org.c.longer.than.sixteen", "org.c", "Org.z"].map { try #require(AppID($0)) }
        var h = Harness(manifests: [])
        h.send(.appsRegistered(ids.map { AppManifest(id: $0) }))
        #expect(h.machine.apps(now: .zero).map(\.id) == ids.sorted())
        let later = try #require(AppID("org.0"))
        h.send(.appRegistered(AppManifest(id: later)))
        #expect(h.machine.apps(now: .zero).map(\.id) == (ids + [later]).sorted())
    }

    @Test func appsRegisteredInOrderStayInOrder() throws {
        let ids = try (0..<50).map { try #require(AppID("org.bench.S\(1000 + $0)")) }
        var h = Harness(manifests: [])
        h.send(.appsRegistered(ids.map { AppManifest(id: $0) }))
        #expect(h.machine.apps(now: .zero).map(\.id) == ids)
    }
}
