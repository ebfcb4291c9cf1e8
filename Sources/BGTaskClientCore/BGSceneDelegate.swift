import BGTaskProtocol

/// One scene of the app (SPEC §15): a window, as the compositor (bgtaskd-focus) or a shell reports it.
public struct BGScene: Sendable, Hashable {
    /// Its ID, unique within the app (bgtaskd-focus: `toplevel-<n>`).
    public var id: String
    /// Its title.
    public var title: String
    /// The display it is on, when known.
    public var output: String?

    public init(id: String, title: String = "", output: String? = nil) {
        self.id = id
        self.title = title
        self.output = output
    }
}

/// The lifecycle callbacks of the app's scenes, as UIKit's `UISceneDelegate` has them (SPEC §15). Setting
/// ``BGApplication/sceneDelegate`` makes the app check in with `scenes: true`.
///
/// Scene callbacks come before the application-level ones they cause (`sceneWillResignActive` before
/// `applicationWillResignActive`), on the main queue, in the daemon's order. Every method has an empty default.
@MainActor
public protocol BGSceneDelegate: AnyObject {
    /// A scene is known from now on.
    func scene(_ scene: BGScene, willConnectTo application: BGApplication)
    /// The scene is about to come to the foreground.
    func sceneWillEnterForeground(_ scene: BGScene)
    /// The scene is active (receives input).
    func sceneDidBecomeActive(_ scene: BGScene)
    /// The scene is about to lose the focus.
    func sceneWillResignActive(_ scene: BGScene)
    /// The scene is in the background.
    func sceneDidEnterBackground(_ scene: BGScene)
    /// The scene is gone (its window closed).
    func sceneDidDisconnect(_ scene: BGScene)
    /// The app is about to be frozen: write a PNG of the scene to `path` (hide what must not show in the App
    /// Switcher first). The daemon is told when this returns (or later: ``BGApplication/deferAcknowledgement()``);
    /// it waits at most `SnapshotTimeoutSec`. The default runs the scene's hook
    /// (``BGApplication/setSnapshotHook(forScene:_:)``), if any.
    func scene(_ scene: BGScene, writeSnapshotTo path: String, application: BGApplication)
}

extension BGSceneDelegate {
    public func scene(_ scene: BGScene, willConnectTo application: BGApplication) {}
    public func sceneWillEnterForeground(_ scene: BGScene) {}
    public func sceneDidBecomeActive(_ scene: BGScene) {}
    public func sceneWillResignActive(_ scene: BGScene) {}
    public func sceneDidEnterBackground(_ scene: BGScene) {}
    public func sceneDidDisconnect(_ scene: BGScene) {}
    public func scene(_ scene: BGScene, writeSnapshotTo path: String, application: BGApplication) {
        _ = application.snapshotHooks[scene.id]?(scene, path)
    }
}

extension BGApplication {
    /// The snapshot hook of one scene: called with the scene and the path to write its PNG to when the app
    /// is about to be frozen (returns whether it wrote one). `nil` removes it.
    @MainActor
    public func setSnapshotHook(forScene id: String, _ hook: (@MainActor (BGScene, String) -> Bool)?) {
        snapshotHooks[id] = hook
    }

    @MainActor
    func dispatchScene(_ event: BGApplicationEvent) {
        guard let delegate = sceneDelegate, let id = event.sceneID else { return }
        let scene = BGScene(id: id, title: event.title ?? "", output: event.output)
        switch event.kind {
        case .sceneWillConnect: delegate.scene(scene, willConnectTo: self)
        case .sceneWillEnterForeground: delegate.sceneWillEnterForeground(scene)
        case .sceneDidBecomeActive: delegate.sceneDidBecomeActive(scene)
        case .sceneWillResignActive: delegate.sceneWillResignActive(scene)
        case .sceneDidEnterBackground: delegate.sceneDidEnterBackground(scene)
        case .sceneDidDisconnect:
            snapshotHooks[id] = nil
            delegate.sceneDidDisconnect(scene)
        case .sceneSnapshot:
            if let path = event.path { delegate.scene(scene, writeSnapshotTo: path, application: self) }
        default: break
        }
    }
}

extension BGApplicationEvent.Kind {
    /// SPEC §15: a scene is known from now on.
    public static let sceneWillConnect = Self(rawValue: "scene-will-connect")
    /// A scene is about to come to the foreground.
    public static let sceneWillEnterForeground = Self(rawValue: "scene-will-enter-foreground")
    /// A scene is active.
    public static let sceneDidBecomeActive = Self(rawValue: "scene-did-become-active")
    /// A scene is about to lose the focus.
    public static let sceneWillResignActive = Self(rawValue: "scene-will-resign-active")
    /// A scene is in the background.
    public static let sceneDidEnterBackground = Self(rawValue: "scene-did-enter-background")
    /// A scene is gone.
    public static let sceneDidDisconnect = Self(rawValue: "scene-did-disconnect")
    /// Write the scene's PNG to `path`, then acknowledge (needsAck).
    public static let sceneSnapshot = Self(rawValue: "scene-snapshot")
}
