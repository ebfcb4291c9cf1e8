public import BGTaskProtocol

/// The lifecycle callbacks of an app, as UIKit's `UIApplicationDelegate` has them.
///
/// Every method runs on the main queue (the main actor), one at a time, in the order the daemon sent the
/// events; every method has an empty default. Keep them short: the daemon is waiting for some of them.
@MainActor
public protocol BGApplicationDelegate: AnyObject {
    /// The app checked in after a launch. `launchReason` says why it was launched: `.user` (it goes on to
    /// the foreground), `.backgroundTask` (a `perform-task` follows) or `.remoteNotification`.
    func applicationDidFinishLaunching(_ application: BGApplication, launchReason: LaunchReason)
    /// The app is about to come to the foreground.
    func applicationWillEnterForeground(_ application: BGApplication)
    /// The app is active: in the foreground and receiving input.
    func applicationDidBecomeActive(_ application: BGApplication)
    /// The app is about to lose the focus (an interruption, or on its way to the background).
    func applicationWillResignActive(_ application: BGApplication)
    /// The app is in the background. The daemon is told when this method returns; soon after, an app
    /// that holds no background task is frozen. Begin a background task here (before returning) to finish
    /// work, or call ``BGApplication/deferAcknowledgement()`` to answer later yourself.
    func applicationDidEnterBackground(_ application: BGApplication)
    /// The app is being terminated. When this returns, the process exits unless
    /// ``BGApplication/exitsOnTerminate`` is false.
    func applicationWillTerminate(_ application: BGApplication)
    /// A notification: posted by a shell (`bgtaskctl notify`), `refresh-status-changed`, or
    /// `remote-notification` for a remote-notification wake — a wake ends when this method returns
    /// (or when a deferred acknowledgement is sent).
    func application(_ application: BGApplication, didReceiveNotification name: String, payload: JSON?)
    /// The system is short of memory: release what can be rebuilt.
    func applicationDidReceiveMemoryWarning(_ application: BGApplication)
    /// Every event as it arrives, before the method for its kind (logging, tools, tests).
    func application(_ application: BGApplication, didReceive event: BGApplicationEvent)
    /// The app checked in (at start, and again after the daemon came back).
    func applicationDidCheckIn(_ application: BGApplication)
    /// Checking in failed, or the connection to the daemon was lost; the library keeps retrying.
    /// Background tasks begun before a loss are gone (their expiration handlers will not run).
    func application(_ application: BGApplication, connectionDidFail error: BGTaskClientError)
}

extension BGApplicationDelegate {
    public func applicationDidFinishLaunching(_ application: BGApplication, launchReason: LaunchReason) {}
    public func applicationWillEnterForeground(_ application: BGApplication) {}
    public func applicationDidBecomeActive(_ application: BGApplication) {}
    public func applicationWillResignActive(_ application: BGApplication) {}
    public func applicationDidEnterBackground(_ application: BGApplication) {}
    public func applicationWillTerminate(_ application: BGApplication) {}
    public func application(_ application: BGApplication, didReceiveNotification name: String, payload: JSON?) {}
    public func applicationDidReceiveMemoryWarning(_ application: BGApplication) {}
    public func application(_ application: BGApplication, didReceive event: BGApplicationEvent) {}
    public func applicationDidCheckIn(_ application: BGApplication) {}
    public func application(_ application: BGApplication, connectionDidFail error: BGTaskClientError) {}
}
