import CSystemd
import Dispatch

// Other descriptors read on the server's socket thread (SPEC §1: the thread of the call path). A descriptor
// whose readiness would otherwise wake libdispatch's event thread and then a worker — the cgroup freezer's
// `cgroup.events` watch, which a resume's own thaw makes readable at the moment the resumed app should run —
// is handled here in the turn after, on the thread already running, with no wake-up of its own.
extension VarlinkServer {
    /// Watches `fd` (level-triggered readability): `handler` runs on the queue, in the socket thread's
    /// turn, each time it is readable; it must read what is there. Not while the server is paused
    /// (`pauseIO()`): `pauseChanged` tells the owner to read it otherwise meanwhile. False if epoll refused.
    public func watchReadable(fd: Int32, handler: @escaping () -> Void) -> Bool {
        dispatchPrecondition(condition: .onQueue(queue))
        let token = takeToken()
        guard epollControl(BGTASKD_EPOLL_CTL_ADD, fd: fd, events: BGTASKD_EPOLLIN, token: token) == 0 else { return false }
        readables[token] = handler
        return true
    }
}
