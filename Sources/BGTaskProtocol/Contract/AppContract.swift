import BGTaskModel


// The hand-written behaviour of `io.bgtaskd.App`'s contract. The method enum (`AppMethod`), the error enum
// (`AppError`) and the structs (`AppWire.*`) are generated from varlink/io.bgtaskd.App.varlink
// (Generated/AppWire+*.generated.swift); what the IDL cannot say is here: which calls name only the app,
// and the checks of values a type cannot express (each one's `validate()`, run by the generated
// `init(json:)` after every field was read; a negative identifier is refused by its type, `WireIdentifier`).

extension AppWire {
    /// A call that names only the app.
    public protocol AppOnly: WireAppNamed {
        var appId: String { get }
        init(appId: String)
    }
}

extension AppWire.CheckIn: WireAppNamed {}
extension AppWire.BackgroundTimeRemaining: AppWire.AppOnly {}
extension AppWire.CancelAllTaskRequests: AppWire.AppOnly {}
extension AppWire.PendingTaskRequests: AppWire.AppOnly {}
extension AppWire.RefreshStatusCall: AppWire.AppOnly {}
extension AppWire.BeginBackgroundTask: WireAppNamed {}
extension AppWire.EndBackgroundTask: WireAppNamed {}
extension AppWire.BeginContinuedTask: WireAppNamed {}
extension AppWire.UpdateTaskProgress: WireAppNamed {}

extension AppWire.BeginContinuedTask {
    /// SPEC §16: a continued task has an identifier; a total is not negative.
    public func validate() throws(WireFieldError) {
        guard !identifier.isEmpty else { throw WireFieldError("identifier") }
        if let totalUnits, totalUnits < 0 { throw WireFieldError("totalUnits") }
    }
}

extension AppWire.UpdateTaskProgress {
    /// SPEC §16: progress names a task (taskId 0 is the invalid identifier) and counts no negative units.
    public func validate() throws(WireFieldError) {
        guard taskId.rawValue > 0 else { throw WireFieldError("taskId") }
        guard completedUnits >= 0 else { throw WireFieldError("completedUnits") }
        if let totalUnits, totalUnits < 0 { throw WireFieldError("totalUnits") }
    }
}

extension AppWire.Acknowledge {
    /// Event ids start at 1.
    public func validate() throws(WireFieldError) {
        guard eventId.rawValue > 0 else { throw WireFieldError("eventId") }
    }
}


extension AppWire.SubmitTaskRequest {
    /// The identifier is not empty; the earliest begin (wall-clock microseconds since the epoch) not negative.
    public func validate() throws(WireFieldError) {
        guard !identifier.isEmpty else { throw WireFieldError("identifier") }
        if let earliestBeginUSec, earliestBeginUSec < 0 { throw WireFieldError("earliestBeginUSec") }
    }
}
