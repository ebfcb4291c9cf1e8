import BGTaskCore
import Testing

// Literals known to be valid, so the force unwraps cannot fail.
private let news = AppID("org.example.News")!
private let photos = AppID("org.example.Photos")!
private let mailApp = AppID("org.example.Mail")!
private let notes = AppID("org.example.Notes")!
private let unknown = AppID("org.example.Unknown")!
private let refreshID = "org.example.News.refresh"

/// `RefreshMachine.appView` (one look-up per table, for ListApps) says what the separate getters say,
/// app by app, through the inputs that change them: restriction, manifest and run-time settings, the
/// global mode, low power mode, a metered network, pending requests, the foreground and use by the user.
@Suite struct RefreshAppViewTests {
    private func expectSame(_ machine: RefreshMachine, at now: RealtimeInstant, _ comment: String) {
        for app in [news, photos, mailApp, notes, unknown] {
            let view = machine.appView(app, now: now)
            let separate = RefreshAppView(
                setting: machine.setting(for: app), status: machine.status(for: app), denial: machine.denial(app),
                pendingCount: machine.pendingCount(for: app), bucket: machine.bucket(for: app, now: now))
            #expect(view == separate, "\(comment): \(app.rawValue)")
        }
    }

    @Test func theViewIsWhatEachGetterSays() {
        let config = RefreshConfig(
            defaultAppRefresh: true,
            apps: [
                news: RefreshConfig.App(permittedIdentifiers: [refreshID], backgroundModes: [.fetch]),
                photos: RefreshConfig.App(backgroundModes: [.remoteNotification], restricted: true),
                mailApp: RefreshConfig.App(backgroundModes: [.fetch], setting: false),
                notes: RefreshConfig.App(backgroundModes: [.fetch]),
            ])
        var machine = RefreshMachine(config: config)
        var wall = RealtimeInstant(microsecondsSinceEpoch: 1_800_000_000_000_000)
        var monotonic = Instant(microseconds: 1_000_000_000)
        func feed(_ input: RefreshInput) {
            _ = machine.handle(input, now: RefreshNow(wall: wall, monotonic: monotonic), facts: { _ in RefreshAppFacts(state: .notRunning) })
        }
        feed(.stateLoaded(RefreshState()))
        feed(.started(detectedPower: false))
        expectSame(machine, at: wall, "started")
        feed(.taskSubmitted(news, TaskRequest(identifier: refreshID, kind: .refresh, earliestBegin: wall + .seconds(3600))))
        feed(.appSettingRequested(notes, enabled: false))
        feed(.appSettingRequested(mailApp, enabled: true))
        expectSame(machine, at: wall, "settings and a pending request")
        feed(.appStateObserved(notes, .active))
        feed(.usedByUser(mailApp))
        wall = wall + .seconds(60)
        monotonic = monotonic + .seconds(60)
        expectSame(machine, at: wall, "foreground and used")
        feed(.lowPowerModeRequested(true))
        expectSame(machine, at: wall, "low power mode")
        feed(.lowPowerModeRequested(false))
        feed(.globalModeRequested(.unmetered))
        feed(.conditionsRequested(onExternalPower: true, network: .metered))
        expectSame(machine, at: wall, "unmetered only, on a metered network")
        feed(.globalModeRequested(.off))
        expectSame(machine, at: wall + .seconds(8 * 86_400), "off, a week later")
    }
}
