import BGTaskProtocol
import Dispatch
import Synchronization

extension BGApplication {
    /// Asks for background execution time (UIKit's `beginBackgroundTask(withName:expirationHandler:)`).
    ///
    /// Returns `.invalid` when it is denied (the budget is spent, too many tasks) or the daemon cannot be
    /// reached. Shortly before the time runs out `expirationHandler` runs on the main actor: end the task
    /// there, or the app is terminated. Call ``endBackgroundTask(_:)`` when the work is done.
    @discardableResult
    public func beginBackgroundTask(
        withName name: String? = nil, expirationHandler: (@MainActor @Sendable () -> Void)? = nil
    ) -> BackgroundTaskIdentifier {
        guard let expirationHandler else { return beginReportingFailure(name, nil) }
        return beginReportingFailure(name) { _ in expirationHandler() }
    }

    /// Like ``beginBackgroundTask(withName:expirationHandler:)-(_,(()->Void)?)``, with the task's identifier
    /// handed to the expiration handler, so that it can end the task without capturing a variable:
    /// `app.beginBackgroundTask(withName: "sync") { app.endBackgroundTask($0) }`.
    @discardableResult
    public func beginBackgroundTask(
        withName name: String? = nil, expirationHandler: @escaping @MainActor @Sendable (BackgroundTaskIdentifier) -> Void
    ) -> BackgroundTaskIdentifier {
        beginReportingFailure(name, expirationHandler)
    }

    private func beginReportingFailure(
        _ name: String?, _ handler: (@MainActor @Sendable (BackgroundTaskIdentifier) -> Void)?
    ) -> BackgroundTaskIdentifier {
        do {
            return try requestBackgroundTask(withName: name, expirationHandler: handler)
        } catch {
            diagnose("beginBackgroundTask(\(name ?? "unnamed")) failed: \(error)")
            return .invalid
        }
    }

    /// Like ``beginBackgroundTask(withName:expirationHandler:)-(_,(()->Void)?)`` but says why a request could not
    /// be made. A denial is not an error: it returns `.invalid`.
    public func requestBackgroundTask(
        withName name: String? = nil,
        expirationHandler: (@MainActor @Sendable (BackgroundTaskIdentifier) -> Void)? = nil
    ) throws(BGTaskClientError) -> BackgroundTaskIdentifier {
        let session = sessions.current
        let (reply, generation) = try calls.call(
            AppMethod.beginBackgroundTask, AppWire.BeginBackgroundTask(appId: appID, name: name),
            reply: AppWire.BeginBackgroundTaskReply.self)
        guard let value = Int(exactly: reply.taskId.rawValue) else {
            throw .invalidReply("BeginBackgroundTask answered without a taskId")
        }
        let id = BackgroundTaskIdentifier(rawValue: value)
        guard id != .invalid else { return .invalid }
        guard session == sessions.current else {
            // The daemon went away during the call: whatever it granted is gone.
            return .invalid
        }
        let expiredEarly = shared.withLock { st in
            st.tasks[id] = TaskEntry(name: name, session: session, generation: generation, handler: expirationHandler)
            st.ended.remove(id)
            return st.earlyExpirations.remove(SessionTask(session: session, task: value)) != nil
        }
        if expiredEarly, let handler = expirationHandler {
            DispatchQueue.main.async { MainActor.assumeIsolated { handler(id) } }
        }
        return id
    }

    /// Ends a background task (UIKit's `endBackgroundTask(_:)`). Ending `.invalid`, an ended task or one
    /// lost with an old connection is harmless; so is ending it from its expiration handler.
    public func endBackgroundTask(_ identifier: BackgroundTaskIdentifier) {
        guard identifier != .invalid else { return }
        let generation = calls.generation
        let send = shared.withLock { st -> Bool in
            if let entry = st.tasks.removeValue(forKey: identifier) {
                // Its connection is gone, and the task with it; the number may be another task's now.
                guard entry.generation == generation else { return false }
                rememberEnded(identifier, in: &st)
                return true
            }
            // Not begun through this object (or already ended): let the daemon judge, once.
            if st.ended.contains(identifier) { return false }
            rememberEnded(identifier, in: &st)
            return true
        }
        guard send else { return }
        do {
            try calls.call(AppMethod.endBackgroundTask, AppWire.EndBackgroundTask(appId: appID, taskId: TaskID(UInt64(clamping: identifier.rawValue))))
        } catch {
            diagnose("endBackgroundTask(\(identifier)) failed: \(error)")
        }
    }

    private func rememberEnded(_ identifier: BackgroundTaskIdentifier, in st: inout Shared) {
        if st.ended.count >= 1024 { st.ended.removeAll(keepingCapacity: true) }
        st.ended.insert(identifier)
    }

    /// Runs `body` inside a background task: begins it, runs `body`, ends it (also when `body` throws).
    ///
    /// When the time is about to run out, `expirationHandler` runs (on the main actor) and the task is
    /// ended, so that the app is not terminated; `body` goes on but may be frozen at any moment. To cover
    /// the moment the app enters the background, begin a task inside `applicationDidEnterBackground`
    /// itself: a Swift `Task` started there runs after the method has returned.
    /// `body` runs on the caller's actor (`isolation`).
    public func withBackgroundTask<T>(
        named name: String? = nil, expirationHandler: (@MainActor @Sendable () -> Void)? = nil,
        isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T
    ) async rethrows -> T {
        let identifier = beginBackgroundTask(withName: name) { [self] identifier in
            expirationHandler?()
            endBackgroundTask(identifier)
        }
        defer { endBackgroundTask(identifier) }
        return try await body()
    }
}
