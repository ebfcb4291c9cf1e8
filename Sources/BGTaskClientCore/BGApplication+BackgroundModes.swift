import BGTaskProtocol
import Dispatch
import Synchronization

extension BGApplication {
    /// Starts an activity of a continuous background mode ("audio is playing"): while it lasts, the app
    /// keeps running in the background without a time budget. The manifest must declare the mode.
    public func beginActivity(_ mode: BackgroundMode) throws(BGTaskClientError) -> BackgroundActivityIdentifier {
        // A mode this library names but the daemon's vocabulary does not know is refused as the daemon would.
        guard let known = BGTaskModel.BackgroundMode(rawValue: mode.rawValue) else { throw .invalidParameter("mode") }
        let (reply, generation) = try calls.call(
            AppMethod.beginActivity, AppWire.BeginActivity(appId: appID, mode: known), reply: AppWire.BeginActivityReply.self)
        guard let value = Int(exactly: reply.activityId.rawValue) else {
            throw .invalidReply("BeginActivity answered without an activityId")
        }
        let id = BackgroundActivityIdentifier(rawValue: value)
        shared.withLock { $0.activities[id] = generation }
        return id
    }

    /// Ends an activity. Ending an unknown or ended one is harmless.
    public func endActivity(_ identifier: BackgroundActivityIdentifier) {
        let generation = calls.generation
        let stale = shared.withLock { st in st.activities.removeValue(forKey: identifier).map { $0 != generation } ?? false }
        guard !stale else { return }
        do {
            try calls.call(AppMethod.endActivity, AppWire.EndActivity(appId: appID, activityId: ActivityID(UInt64(clamping: identifier.rawValue))))
        } catch {
            diagnose("endActivity(\(identifier.rawValue)) failed: \(error)")
        }
    }
}
