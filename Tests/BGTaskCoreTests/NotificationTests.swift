import BGTaskCore
import Testing

/// Notifications queued while suspended (SPEC §7).
@Suite struct NotificationTests {
    func suspendedMail() -> Harness {
        var h = Harness()
        h.launchActive(mail)
        if let dib = h.background(mail) { h.send(.eventAcknowledged(dib.id)) }
        return h
    }

    @Test func runningAppsGetNotificationsAtOnce() {
        var h = Harness()
        h.launchActive(mail, connection: connA)
        h.launchActive(music, connection: connB, pid: 2)
        let post = h.send(.notificationPosted(name: "theme-changed", app: nil, payload: nil))
        #expect(post.events(for: mail).map { $0.kind } == [.notification])
        #expect(post.events(for: music).map { $0.name } == ["theme-changed"])
        #expect(post.decisions(.notify).count == 2)
        #expect(post.replies == [.ok])
    }

    @Test func queuedNotificationsAreCoalescedByNameInOrderOfLatestPosting() {
        var h = suspendedMail()
        #expect(h.state(mail) == .suspended)
        let first = h.send(.notificationPosted(name: "a", app: mail, payload: Payload(json: "1")))
        #expect(first.events.isEmpty && first.thaws.isEmpty)
        #expect(first.decisions(.notify).first?.reason == .notificationQueued)
        h.send(.notificationPosted(name: "b", app: nil, payload: Payload(json: "1")))
        h.send(.notificationPosted(name: "a", app: mail, payload: Payload(json: "2")))
        #expect(h.snapshot(mail)?.queuedNotifications.map { $0.name } == ["b", "a"])
        let wake = h.send(.taskRunRequested(mail, identifier: "r", kind: .refresh, reason: .taskScheduled))
        guard case .thaw(mail, _, _)? = wake.first else { return #expect(Bool(false)) }
        #expect(
            wake.sequence == [
                Step(.notification, .background), Step(.notification, .background),
                Step(.didEnterBackground, .background), Step(.performTask, .background),
            ])
        #expect(wake.events.prefix(2).map { $0.name } == ["b", "a"])
        #expect(wake.events.prefix(2).map { $0.payload } == [Payload(json: "1"), Payload(json: "2")])
        #expect(h.snapshot(mail)?.queuedNotifications.isEmpty == true)
    }

    @Test func aFullQueueDropsTheOldestName() {
        var h = suspendedMail()
        for n in 0..<64 { h.send(.notificationPosted(name: "n\(n)", app: mail, payload: nil)) }
        let overflow = h.send(.notificationPosted(name: "n64", app: mail, payload: nil))
        let decision = overflow.decisions(.notify).first
        #expect(decision?.reason == .queueFull)
        #expect(decision?.severity == .warning)
        let names = h.snapshot(mail)?.queuedNotifications.map { $0.name } ?? []
        #expect(names.count == 64)
        #expect(names.first == "n1" && names.last == "n64")
        // Re-posting a queued name does not drop anything.
        #expect(h.send(.notificationPosted(name: "n5", app: mail, payload: nil)).decisions(.notify).first?.reason == .notificationQueued)
        #expect(h.snapshot(mail)?.queuedNotifications.count == 64)
    }

    @Test func notRunningAndUnawareAppsGetNothing() {
        var h = Harness()
        let post = h.send(.notificationPosted(name: "x", app: mail, payload: nil))
        #expect(post.events.isEmpty)
        #expect(post.decisions(.notify).first?.reason == .notRunning)
        h.send(.launchRequested(terminal, background: false, exclusive: true))
        h.send(.appLaunched(terminal, pid: 4))
        #expect(h.send(.notificationPosted(name: "x", app: terminal, payload: nil)).decisions.first?.reason == .notLifecycleAware)
    }
}
