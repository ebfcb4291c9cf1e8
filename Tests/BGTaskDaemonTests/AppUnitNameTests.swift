import Testing
@testable import BGTaskDaemon

/// SPEC §13: unit names of systemd's desktop convention → the app IDs to try, in order.
@Suite struct AppUnitNameTests {
    @Test("names", arguments: [
        ("app-gnome-org.gnome.Maps-12345.scope", "gnome", ["org.gnome.Maps", "gnome-org.gnome.Maps"]),
        ("app-test-org.example.A-1234.scope", "test", ["org.example.A", "test-org.example.A"]),
        ("app-flatpak-org.gnome.Maps-123.scope", "flatpak", ["org.gnome.Maps", "flatpak-org.gnome.Maps"]),
        ("app-gnome-org.example.A@5678.service", "gnome", ["org.example.A", "gnome-org.example.A"]),
        ("app-org.example.A@autostart.service", nil, ["org.example.A"]),
        ("app-org.example.A-99.scope", nil, ["org.example.A"]),
        ("app-gnome-org.example.A.service", "gnome", ["org.example.A", "gnome-org.example.A"]),
        (#"app-gnome-org.example.My\x2dApp-77.scope"#, "gnome", ["org.example.My-App", "gnome-org.example.My-App"]),
        (#"app-my\x2dlauncher-firefox\x2desr-1.scope"#, "my-launcher", ["firefox-esr", "my-launcher-firefox-esr"]),
        // A launcher that does not escape the dashes of the ID.
        ("app-gnome-firefox-esr-4242.scope", "gnome", ["firefox-esr", "gnome-firefox-esr"]),
    ] as [(String, String?, [String])])
    func names(name: String, launcher: String?, candidates: [String]) throws {
        let parsed = try #require(AppUnitName.parse(name))
        #expect(parsed.launcher == launcher)
        #expect(parsed.candidates == candidates)
    }

    @Test("not app units", arguments: [
        "gnome-terminal-server.service", "app.slice", "app-gnome.slice", "app-nodash.scope", "app--x-1.scope",
        "xapp-a-1.scope", "app-org.example.A-1.socket",
    ])
    func notAppUnits(name: String) {
        #expect(AppUnitName.parse(name) == nil)
    }

    @Test func unescape() {
        #expect(AppUnitName.unescape(#"a\x2db\x2Dc\x2"#) == #"a-b-c\x2"#)
    }
}
