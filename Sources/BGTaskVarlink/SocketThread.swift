import CSystemd
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// The Varlink server's one thread of its own (SPEC §1): it blocks in `epoll_wait` on the
/// server's epoll set and enters the server's serial queue with `queue.sync` once per wake-up, with
/// every event that wake-up returned (a batch of up to `maxEvents`). `queue.sync` from a thread that is
/// not a Dispatch worker runs the block inline on this thread when the queue is idle: one wake-up per
/// message, where a Dispatch read source costs two (libdispatch's event thread, then a worker).
///
/// The queue stays the only owner of the server's state: this thread touches nothing of it outside
/// `queue.sync`, and the event buffers it fills are read only inside that block, while it waits.
/// Timers, signals, inotify and the journal's hand-off stay Dispatch sources and queues.
///
/// Pausing (journal congestion, `VarlinkServer.pauseIO()`): the queue sets `paused` under `lock`; the
/// thread, back from `queue.sync`, waits on `resumed` until the queue clears it (level-triggered events
/// are reported again afterwards; an edge-triggered listener has the server's 100 ms retry timer).
///
/// Stopping (`VarlinkServer.shutdown()` or its deinit): `stop()` sets `stopping` under `lock`, signals
/// `resumed` and makes `wakeFD` (an eventfd in the epoll set, token 0) readable, so the thread leaves
/// `epoll_wait`, the pause wait, or — if it was waiting to enter the queue — its next check right after
/// `queue.sync` returns; it then exits. It is detached rather than joined: joining on the queue could
/// deadlock against a thread waiting in `queue.sync` for that same queue. It holds the only other
/// reference to this object, so the epoll set, the eventfd and the buffers are released when it exits.
final class SocketThread: @unchecked Sendable {
    // @unchecked: `paused` and `stopping` are guarded by `lock`; the buffers are written by the thread
    // only outside `queue.sync` and read by the queue only inside it; the rest is immutable.
    static let maxEvents = 256
    let epfd: Int32
    private let wakeFD: Int32
    let tokens = UnsafeMutablePointer<UInt64>.allocate(capacity: SocketThread.maxEvents)
    let masks = UnsafeMutablePointer<UInt32>.allocate(capacity: SocketThread.maxEvents)
    private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let resumed = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var paused = false
    private var stopping = false
    private var threadID: Int32 = 0
    /// `start` created the thread (guarded by `lock`): `tid` may wait for it to say its id.
    private var started = false
    /// The token of `wakeFD`; connections and listeners get tokens from 1.
    static let wakeToken: UInt64 = 0

    /// How many wake-ups one work item runs before the thread makes a new one (`run`).
    let runsPerItem: Int

    /// nil when the process is out of descriptors (deinit releases what was made).
    init?(runsPerItem: Int = 1 << 20) {
        self.runsPerItem = max(1, runsPerItem)
        pthread_mutex_init(lock, nil)
        pthread_cond_init(resumed, nil)
        epfd = bgtaskd_epoll_create()
        wakeFD = epfd >= 0 ? bgtaskd_eventfd() : -1
        guard epfd >= 0, wakeFD >= 0,
            bgtaskd_epoll_ctl(epfd, BGTASKD_EPOLL_CTL_ADD, wakeFD, BGTASKD_EPOLLIN, Self.wakeToken) == 0
        else { return nil }
    }

    deinit {
        if wakeFD >= 0 { Glibc.close(wakeFD) }
        if epfd >= 0 { Glibc.close(epfd) }
        tokens.deallocate()
        masks.deallocate()
        pthread_mutex_destroy(lock)
        pthread_cond_destroy(resumed)
        lock.deallocate()
        resumed.deallocate()
    }

    /// Starts the thread; `turn(count)` runs on `queue` for every wake-up with the events in `tokens`
    /// and `masks`, and returns false once the thread should stop (its server is gone).
    func start(queue: DispatchQueue, turn: @escaping @Sendable (Int) -> Bool) -> Bool {
        let context = Unmanaged.passRetained(Context(thread: self, queue: queue, turn: turn)).toOpaque()
        var tid = pthread_t()
        let r = pthread_create(&tid, nil, { raw in
            guard let raw else { return nil }
            let context = Unmanaged<Context>.fromOpaque(raw).takeRetainedValue()
            bgtaskd_set_thread_name("bgtaskd-sockets")
            context.thread.setThreadID(bgtaskd_gettid())
            context.thread.run(queue: context.queue, turn: context.turn)
            return nil
        }, context)
        guard r == 0 else {
            Unmanaged<Context>.fromOpaque(context).release()
            return false
        }
        pthread_detach(tid)
        pthread_mutex_lock(lock)
        started = true
        pthread_mutex_unlock(lock)
        return true
    }

    private final class Context: @unchecked Sendable {
        let thread: SocketThread
        let queue: DispatchQueue
        let turn: @Sendable (Int) -> Bool
        init(thread: SocketThread, queue: DispatchQueue, turn: @escaping @Sendable (Int) -> Bool) {
            self.thread = thread
            self.queue = queue
            self.turn = turn
        }
    }

    /// What one wake-up hands to its turn and gets back, read and written only by this thread (the block
    /// runs on it, inline, while it waits in `queue.sync`).
    private final class TurnState: @unchecked Sendable {
        var count = 0
        var goOn = true
    }

    private func run(queue: DispatchQueue, turn: @escaping @Sendable (Int) -> Bool) {
        // One work item made once and run every wake-up: `queue.sync` with a closure allocates three times per
        // call (the generic `sync<T>`'s box, the closure's context and its block; ~200 ns per turn, measured
        // against this in bench/README.md), a work item's block is made once. It is never waited on or
        // cancelled, so running it more than once is allowed. But libdispatch counts an item's runs in a
        // 32-bit `int` (`dbpd_performed`) and leaves the item's group when the count reaches 1: after 2^32
        // runs (a day of wake-ups at 50,000 a second) it would wrap and leave the group again, a trap
        // ("Unbalanced call to dispatch_group_leave()"). So a new item every `runsPerItem` wake-ups.
        let state = TurnState()
        let makeItem = { DispatchWorkItem { state.goOn = turn(state.count) } }
        var item = makeItem()
        var runs = 0
        while true {
            let n = bgtaskd_epoll_wait(epfd, tokens, masks, Int32(Self.maxEvents), -1)
            if n < 0 {
                if n == -EINTR { continue }
                // EBADF/EINVAL cannot happen while this object lives; do not spin if they did.
                return
            }
            if isStopping() { return }
            // Deadlock-freedom: this thread holds no lock here and nothing that runs on `queue` ever
            // waits for this thread (pause, resume and stop only set a flag, signal a condition or write
            // the eventfd; none blocks). So `queue.sync` waits at most for the queue's current work
            // item, which finishes on its own. Re-entrancy: the block never calls `queue.sync` itself.
            state.count = Int(n)
            if runs == runsPerItem {
                item = makeItem()
                runs = 0
            }
            runs += 1
            queue.sync(execute: item)
            if !state.goOn || !waitWhilePaused() { return }
        }
    }

    private func setThreadID(_ tid: Int32) {
        pthread_mutex_lock(lock)
        threadID = tid
        pthread_cond_broadcast(resumed)
        pthread_mutex_unlock(lock)
    }

    /// The thread's id (tests find it in /proc/self/task); once `start` succeeded, waits for the new
    /// thread to have named itself and said its id, which is the first thing it does. 0 if never started.
    var tid: Int32 {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        while started && threadID == 0 { pthread_cond_wait(resumed, lock) }
        return threadID
    }

    private func isStopping() -> Bool {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return stopping
    }

    /// Back from a turn: blocks while the server is paused. False once stopping.
    private func waitWhilePaused() -> Bool {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        while paused && !stopping { pthread_cond_wait(resumed, lock) }
        return !stopping
    }

    /// The server stops reading (called on its queue; never blocks).
    func pause() {
        pthread_mutex_lock(lock)
        paused = true
        pthread_mutex_unlock(lock)
    }

    /// The server reads again (called on its queue; never blocks).
    func resume() {
        pthread_mutex_lock(lock)
        paused = false
        pthread_cond_signal(resumed)
        pthread_mutex_unlock(lock)
    }

    /// Makes the thread exit (never blocks; see the type's comment).
    func stop() {
        pthread_mutex_lock(lock)
        stopping = true
        pthread_cond_signal(resumed)
        pthread_mutex_unlock(lock)
        bgtaskd_eventfd_signal(wakeFD)
    }
}
