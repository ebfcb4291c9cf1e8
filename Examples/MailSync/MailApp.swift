import BGTaskClient
import Foundation

let refreshTask = "org.example.Mail.refresh"

enum MailApp {
    @MainActor
    static func main() -> Never {
        let app = BGApplication(appID: BGApplication.environmentAppID ?? "org.example.Mail")
        let mail = MailDelegate()
        app.delegate = mail

        // Woken in the background to refresh: sync, then say so (the app is suspended again after).
        BGTaskScheduler.shared.register(forTaskWithIdentifier: refreshTask, using: nil) { task in
            Task { @MainActor in
                mail.scheduleRefresh()
                task.expirationHandler = { Task { @MainActor in mail.mailbox.cancel() } }
                let finished = await mail.mailbox.sync(seconds: 2)
                task.setTaskCompleted(success: finished)
            }
        }
        app.run()  // checks in; the delegate's methods run on the main queue
    }
}

@MainActor
final class MailDelegate: BGApplicationDelegate {
    let mailbox = Mailbox()

    func applicationDidFinishLaunching(_ application: BGApplication, launchReason: LaunchReason) {
        say("launched (\(launchReason.rawValue)), refresh is \(application.backgroundRefreshStatus.rawValue)")
        scheduleRefresh()
    }

    func applicationDidBecomeActive(_ application: BGApplication) {
        say("active")
    }

    func applicationDidEnterBackground(_ application: BGApplication) {
        // Ask for time before returning: once this method returns, an app that holds no background
        // task is frozen.
        let task = application.beginBackgroundTask(withName: "finish-sync") { task in
            say("out of time: stopping the sync")
            self.mailbox.cancel()
            application.endBackgroundTask(task)
        }
        guard task != .invalid else { return say("no background time granted") }
        say("in the background, \(Int(application.backgroundTimeRemaining)) s to finish the sync")
        Task {
            let finished = await mailbox.sync(seconds: 3)
            application.endBackgroundTask(task)
            say(finished ? "sync done, background task ended" : "sync stopped")
        }
    }

    func applicationWillTerminate(_ application: BGApplication) {
        say("terminating")
    }

    /// Asks to be woken in 15 minutes at the earliest (the request replaces any pending one).
    func scheduleRefresh() {
        let request = BGAppRefreshTaskRequest(identifier: refreshTask)
        request.earliestBeginDate = Date(timeIntervalSinceNow: 15 * 60)
        do {
            try BGTaskScheduler.shared.submit(request)
        } catch {
            say("could not schedule a refresh: \(error)")
        }
    }
}

/// Pretends to download mail, one step a second, until done or cancelled.
@MainActor
final class Mailbox {
    private var cancelled = false

    func cancel() { cancelled = true }

    @discardableResult
    func sync(seconds: Int) async -> Bool {
        cancelled = false
        for step in 1...seconds {
            try? await Task.sleep(for: .seconds(1))
            if cancelled { return false }
            say("synced \(step * 100 / seconds)%")
        }
        return true
    }
}

/// One line on stdout, at once (stdout is a pipe to the journal when the daemon launches the app).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data("mail-sync: \(line)\n".utf8))
}
