import BGTaskProtocol
import Dispatch
import Synchronization

/// A `needsAck` event whose acknowledgement the app took over with ``BGApplication/deferAcknowledgement()``.
public final class BGEventAcknowledgement: Sendable {
    /// The event to acknowledge.
    public let eventID: Int64
    let session: Int
    private let application: BGApplication
    private let state = Mutex((deferred: false, sent: false))

    init(application: BGApplication, eventID: Int64, session: Int) {
        self.application = application
        self.eventID = eventID
        self.session = session
    }

    var isDeferred: Bool { state.withLock { $0.deferred } }

    func markDeferred() { state.withLock { $0.deferred = true } }

    /// Tells the daemon the event is handled. Only the first call counts; from any thread. An
    /// acknowledgement for a daemon that has since gone away is not sent.
    public func acknowledge() {
        let first = state.withLock { st in
            defer { st.sent = true }
            return !st.sent
        }
        if first { application.sendAcknowledgement(eventID, session: session) }
    }
}

extension BGApplication {
    /// Takes over the acknowledgement of the event being delivered (`did-enter-background`, a
    /// remote-notification wake): the library will not send it when the delegate method returns; call
    /// ``BGEventAcknowledgement/acknowledge()`` when ready. Until then the daemon keeps the app running —
    /// up to its timeout, after which it terminates the app (`did-enter-background-timeout`).
    /// Returns nil outside the delegate method of an event that needs an acknowledgement.
    @MainActor
    public func deferAcknowledgement() -> BGEventAcknowledgement? {
        acknowledgementInDelivery?.markDeferred()
        return acknowledgementInDelivery
    }

    func sendAcknowledgement(_ eventID: Int64, session: Int) {
        // An event of a daemon that has gone away: the new one knows nothing of it.
        guard session == sessions.current else { return }
        do {
            try calls.call(AppMethod.acknowledge, AppWire.Acknowledge(eventId: EventID(UInt64(clamping: eventID))))
        } catch {
            diagnose("acknowledging event \(eventID) failed: \(error)")
        }
    }
}
