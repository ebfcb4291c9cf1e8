import BGTaskProtocol
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

// The two connections an app keeps to the daemon: the CheckIn stream on a thread of its own, and the
// call connection shared (one call at a time) by every other request.

/// Delays between reconnection attempts: `initial`, doubling, at most `maximum` (seconds).
struct Backoff: Sendable, Equatable {
    var initial: Double = 0.1
    var maximum: Double = 2

    /// The delay before attempt `n` (0-based) after a failure.
    func delay(attempt n: Int) -> Double {
        var d = initial
        for _ in 0..<min(max(0, n), 32) where d < maximum { d *= 2 }
        return min(d, maximum)
    }
}

/// Runs `body` on a new detached thread (falls back to a Dispatch worker if none can be made).
/// The event stream blocks in `read` for the app's lifetime, so it gets a real thread, not a pool worker.
func spawnThread(_ body: @escaping @Sendable () -> Void) {
    final class Box {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(&thread, nil, { arg in
        guard let arg else { return nil }
        Unmanaged<Box>.fromOpaque(arg).takeRetainedValue().body()
        return nil
    }, box)
    if rc == 0 {
        pthread_detach(thread)
    } else {
        Unmanaged<Box>.fromOpaque(box).release()
        DispatchQueue.global().async(execute: body)
    }
}

/// Writes one line to stderr (the journal, for a daemon-launched app). `stderr` itself is not
/// concurrency-safe in Swift 6, so this writes to fd 2.
func diagnose(_ message: String) {
    let line = Array("BGTaskClient: \(message)\n".utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

/// The call connection: every request other than CheckIn, one at a time.
///
/// It stays open for the app's lifetime, because an assertion lives no longer than the connection that
/// began it (SPEC §3). If the daemon has gone away, a call that could not even be sent is retried once on a
/// fresh connection; a call that was sent but got no reply is not retried (it may have taken effect).
final class CallChannel: Sendable {
    let path: String
    let timeout: Double

    private struct State {
        var connection: VarlinkClientConnection?
        /// Increases whenever a connection is dropped: assertions begun on an older one are gone.
        var generation = 1

        mutating func drop() {
            connection?.close()
            connection = nil
            generation += 1
        }
    }
    private let state = Mutex(State())

    init(path: String, timeout: Double = 10) {
        self.path = path
        self.timeout = timeout
    }

    /// The generation of the current connection (or of the next one, if none is open).
    var generation: Int { state.withLock { $0.generation } }

    /// Calls `method` and returns the reply's parameters.
    @discardableResult
    func call(_ method: String, _ parameters: [String: JSON] = [:]) throws(BGTaskClientError) -> [String: JSON] {
        try callTracked(method, parameters).parameters
    }

    /// Calls a method of the contract with its parameters; the reply's parameters.
    @discardableResult
    func call(_ method: some WireMethod, _ parameters: some WireMessage) throws(BGTaskClientError) -> [String: JSON] {
        try callTracked(method.qualifiedName, parameters.json).parameters
    }

    /// Calls a method of the contract and reads its reply as `R` (`invalidReply` when it does not fit).
    func call<R: WireMessage>(
        _ method: some WireMethod, _ parameters: some WireMessage, reply: R.Type
    ) throws(BGTaskClientError) -> (reply: R, generation: Int) {
        let (json, generation) = try callTracked(method.qualifiedName, parameters.json)
        do {
            return (try R(json: json), generation)
        } catch {
            throw .invalidReply("\(method.qualifiedName) answered with an invalid \(error.field)")
        }
    }

    /// Calls `method` and returns the reply's parameters with the generation of the connection that
    /// carried the call (what the call began lives as long as that generation).
    func callTracked(
        _ method: String, _ parameters: [String: JSON] = [:]
    ) throws(BGTaskClientError) -> (parameters: [String: JSON], generation: Int) {
        try state.withLock { (st: inout State) throws(BGTaskClientError) -> (parameters: [String: JSON], generation: Int) in
            var attempt = 0
            while true {
                attempt += 1
                let connection: VarlinkClientConnection
                let fresh: Bool
                if let open = st.connection {
                    connection = open
                    fresh = false
                } else {
                    do throws(VarlinkClientError) {
                        connection = try VarlinkClientConnection(path: path)
                    } catch {
                        throw BGTaskClientError(error)
                    }
                    if timeout > 0 { connection.setTimeout(seconds: timeout) }
                    st.connection = connection
                    fresh = true
                }
                do throws(VarlinkClientError) {
                    try connection.send(VarlinkCall(method: method, parameters: parameters))
                } catch {
                    // Nothing reached the daemon: the connection was already dead.
                    st.drop()
                    if fresh || attempt > 1 { throw BGTaskClientError(error) }
                    continue
                }
                let reply: VarlinkReply
                do throws(VarlinkClientError) {
                    reply = try connection.readReply()
                } catch {
                    st.drop()
                    throw BGTaskClientError(error)
                }
                if let name = reply.error { throw BGTaskClientError(varlinkError: VarlinkError(name, reply.parameters)) }
                if reply.continues {
                    // A call without `more` never continues; the rest of the stream would be taken for
                    // the replies of later calls.
                    st.drop()
                    throw .invalidReply("\(method) answered with continues")
                }
                return (reply.parameters, st.generation)
            }
        }
    }

    /// Closes the connection (the daemon releases what it held); the next call opens a new one.
    func reset() {
        state.withLock { $0.drop() }
    }
}

/// A stream connection that another thread may shut down (to stop the stream) while its own thread
/// reads; shutting down and closing never race because both go through the lock.
private final class StreamConnection: @unchecked Sendable {
    let connection: VarlinkClientConnection
    private let closed = Mutex(false)

    init(_ connection: VarlinkClientConnection) { self.connection = connection }

    func shutdown() {
        closed.withLock { if !$0 { connection.shutdown() } }
    }

    func close() {
        closed.withLock { closed in
            if !closed {
                closed = true
                connection.close()
            }
        }
    }
}

/// The CheckIn stream: connects, checks in, hands every reply to `handler` in order, and when the daemon
/// goes away reconnects with backoff and checks in again. Runs on a thread of its own.
final class EventStream: Sendable {
    /// What the stream reports, in order, from its thread.
    enum Input: Sendable, Equatable {
        /// The first reply of a check-in. `session` counts check-ins: events carry theirs, so that work
        /// begun with one daemon is never confused with the next one's.
        case checkedIn(CheckInReply, session: Int)
        /// A later reply, with its event (or a bare state update, `event` nil).
        case event(CheckInReply, session: Int)
        /// The checked-in stream ended: the daemon went away or closed it.
        case lost(BGTaskClientError, session: Int)
        /// Connecting or checking in failed; another attempt follows after `retryIn` seconds.
        case checkInFailed(BGTaskClientError, retryIn: Double)
    }

    let appID: String
    let path: String
    let backoff: Backoff
    /// SPEC §15: check in with `scenes: true`.
    let scenes: Bool
    private let handler: @Sendable (Input) -> Void

    private struct State {
        var started = false
        var stopped = false
        var connection: StreamConnection?
        var session = 0
    }
    private let state = Mutex(State())
    private let wakeup = DispatchSemaphore(value: 0)
    /// Signalled when the stream's thread has returned: after `stop()`, nothing can follow.
    private let finished = DispatchSemaphore(value: 0)

    init(
        appID: String, path: String, backoff: Backoff = Backoff(), scenes: Bool = false,
        handler: @escaping @Sendable (Input) -> Void
    ) {
        self.appID = appID
        self.scenes = scenes
        self.path = path
        self.backoff = backoff
        self.handler = handler
    }

    /// Starts the stream's thread (once).
    func start() {
        let first = state.withLock { st in
            defer { st.started = true }
            return !st.started
        }
        if first {
            spawnThread {
                self.loop()
                self.finished.signal()
            }
        }
    }

    /// Waits until the stream's thread has returned (after `stop()`); false if it has not within
    /// `seconds`.
    func waitUntilFinished(seconds: Double) -> Bool {
        guard finished.wait(timeout: .now() + .milliseconds(Int(seconds * 1000))) == .success else { return false }
        finished.signal()  // others may wait too
        return true
    }

    /// Ends the stream: the connection is shut down and no reconnection follows.
    func stop() {
        let connection = state.withLock { st in
            st.stopped = true
            return st.connection
        }
        connection?.shutdown()
        wakeup.signal()
    }

    private var isStopped: Bool { state.withLock { $0.stopped } }

    private func loop() {
        var failures = 0
        while !isStopped {
            var checkedIn = false
            var session = 0
            let failure: BGTaskClientError
            do throws(BGTaskClientError) {
                let raw: VarlinkClientConnection
                do throws(VarlinkClientError) {
                    raw = try VarlinkClientConnection(path: path)
                } catch {
                    throw BGTaskClientError(error)
                }
                let connection = StreamConnection(raw)
                let registered = state.withLock { st in
                    if st.stopped { return false }
                    st.connection = connection
                    // Sessions count check-ins, not attempts: a refused CheckIn uses none.
                    session = st.session + 1
                    return true
                }
                defer {
                    state.withLock { $0.connection = nil }
                    connection.close()
                }
                guard registered else { break }
                var invalid: BGTaskClientError?
                do throws(VarlinkClientError) {
                    try connection.connection.stream(AppMethod.checkIn.qualifiedName, AppWire.CheckIn(appId: appID, scenes: scenes ? true : nil).json) { parameters in
                        let reply: CheckInReply
                        do throws(BGTaskClientError) {
                            reply = try CheckInReply(parameters: parameters)
                        } catch {
                            invalid = error
                            return false
                        }
                        if !checkedIn {
                            checkedIn = true
                            failures = 0
                            state.withLock { $0.session = session }
                            handler(.checkedIn(CheckInReply(state: reply.state, refreshStatus: reply.refreshStatus), session: session))
                            if reply.event != nil { handler(.event(reply, session: session)) }
                        } else {
                            handler(.event(reply, session: session))
                        }
                        return !isStopped
                    }
                } catch {
                    throw BGTaskClientError(error)
                }
                failure = invalid ?? .disconnected("the daemon ended the event stream")
            } catch {
                failure = error
            }
            if isStopped { break }
            if checkedIn {
                handler(.lost(failure, session: session))
                // Come back quickly after a restart; back off only if the next attempts fail.
                if waitOrStop(backoff.initial) { break }
            } else {
                let delay = backoff.delay(attempt: failures)
                failures += 1
                handler(.checkInFailed(failure, retryIn: delay))
                if waitOrStop(delay) { break }
            }
        }
    }

    /// Waits `seconds` or until stopped; true when stopped.
    private func waitOrStop(_ seconds: Double) -> Bool {
        _ = wakeup.wait(timeout: .now() + .microseconds(Int(max(0, seconds) * 1_000_000)))
        return isStopped
    }
}
