import BGTaskProtocol
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

extension BGApplication {
    /// On the stream's thread: bookkeeping that must not wait for the main queue, then hand over.
    func streamReported(_ input: EventStream.Input) {
        switch input {
        case .checkedIn(_, let session):
            sessions.set(session)
            let recovered = shared.withLock { st -> Bool in
                defer { st.lastReportedFailure = nil }
                return st.lastReportedFailure != nil
            }
            if recovered { diagnose("checked in as \(appID)") }
            post(input)
        case .event:
            post(input)
        case .lost(let error, let session):
            // The daemon is gone or dropped the app: every assertion went with it.
            sessions.set(session + 1)
            calls.reset()
            shared.withLock { st in
                // Their numbers mean nothing to the next daemon: ending them stays local.
                st.ended = Set(st.tasks.filter { $0.value.session <= session }.keys)
                st.tasks = st.tasks.filter { $0.value.session > session }
                st.earlyExpirations = st.earlyExpirations.filter { $0.session > session }
                st.activities.removeAll()
                st.lastReportedFailure = error
            }
            taskScheduler.sessionEnded(session)
            diagnose("lost the connection to bgtaskd (\(error)); reconnecting")
            post(input)
        case .checkInFailed(let error, let delay):
            let repeated = shared.withLock { st in
                defer { st.lastReportedFailure = error }
                return st.lastReportedFailure == error
            }
            guard !repeated else { return }
            diagnose("cannot check in as \(appID): \(error); retrying in \(delay) s")
            post(input)
        }
    }

    func post(_ input: EventStream.Input) {
        DispatchQueue.main.async { [self] in
            MainActor.assumeIsolated { deliver(input) }
        }
    }

    @MainActor
    private func deliver(_ input: EventStream.Input) {
        switch input {
        case .checkedIn(let reply, _):
            shared.withLock { st in
                st.tracker.apply(reply)
                st.checkedIn = true
            }
            delegate?.applicationDidCheckIn(self)
        case .event(let reply, let session):
            shared.withLock { $0.tracker.apply(reply) }
            if let event = reply.event { dispatch(event, session: session) }
        case .lost(let error, _):
            shared.withLock { $0.checkedIn = false }
            delegate?.application(self, connectionDidFail: error)
        case .checkInFailed(let error, _):
            delegate?.application(self, connectionDidFail: error)
        }
    }

    @MainActor
    private func dispatch(_ event: BGApplicationEvent, session: Int) {
        let acknowledgement = event.needsAck ? BGEventAcknowledgement(application: self, eventID: event.id, session: session) : nil
        let outer = acknowledgementInDelivery
        acknowledgementInDelivery = acknowledgement
        let delegate = self.delegate
        delegate?.application(self, didReceive: event)
        switch event.kind {
        case .didFinishLaunching:
            delegate?.applicationDidFinishLaunching(self, launchReason: event.launchReason ?? .user)
        case .willEnterForeground:
            delegate?.applicationWillEnterForeground(self)
        case .didBecomeActive:
            delegate?.applicationDidBecomeActive(self)
        case .willResignActive:
            delegate?.applicationWillResignActive(self)
        case .didEnterBackground:
            delegate?.applicationDidEnterBackground(self)
        case .backgroundTaskWillExpire:
            if let task = event.taskID {
                expire(task, session: session)
            } else if let identifier = event.identifier {
                taskScheduler.expire(identifier: identifier, session: session)
            }
        case .willTerminate:
            delegate?.applicationWillTerminate(self)
        case .performTask:
            if let identifier = event.identifier { taskScheduler.perform(identifier: identifier, session: session) }
        case .notification:
            delegate?.application(self, didReceiveNotification: event.name ?? "", payload: event.payload)
        case .memoryWarning:
            delegate?.applicationDidReceiveMemoryWarning(self)
        default:
            dispatchScene(event)  // SPEC §15; any other kind from a newer daemon: acknowledged below if it asks
        }
        acknowledgementInDelivery = outer
        if let acknowledgement, !acknowledgement.isDeferred { acknowledgement.acknowledge() }
        if event.kind == .willTerminate && exitsOnTerminate { exit(0) }
    }

    @MainActor
    private func expire(_ task: BackgroundTaskIdentifier, session: Int) {
        let handler = shared.withLock { st -> (@MainActor @Sendable (BackgroundTaskIdentifier) -> Void)? in
            if let entry = st.tasks[task], entry.session == session { return entry.handler }
            // Not registered yet: BeginBackgroundTask's reply and this event crossed.
            if session == sessions.current {
                if st.earlyExpirations.count >= 256 { st.earlyExpirations.removeAll() }
                st.earlyExpirations.insert(SessionTask(session: session, task: task.rawValue))
            }
            return nil
        }
        handler?(task)
    }
}
