@_exported import BGTaskModel

/// Errors returned to a request (a `Reply.failure`). Their names on the wire are the protocol's
/// (`AppError`, `ManagerError` in BGTaskProtocol; the daemon maps one to the other in Calls/Replies.swift).
public enum CoreError: String, Error, CaseIterable, Hashable, Sendable, Codable {
    /// No manifest for that app.
    case noSuchApp = "no-such-app"
    /// The app has not checked in (no event stream).
    case notCheckedIn = "not-checked-in"
    /// The app already has an event stream.
    case alreadyCheckedIn = "already-checked-in"
    /// The manifest does not declare the background mode.
    case modeNotDeclared = "mode-not-declared"
    /// The mode is declared but not continuous, so it cannot be held as an activity.
    case modeNotContinuous = "mode-not-continuous"
    /// The request does not fit the app's state (not running, terminating, not lifecycle-aware…).
    case invalidState = "invalid-state"
    /// The caller may not make this call (not root, not the app's user, not in `ControlGroup=`).
    case permissionDenied = "permission-denied"

}
