import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// Closes `fd` a little after its Dispatch sources were cancelled. libdispatch's Linux epoll backend
/// keeps per-fd bookkeeping ("muxnotes") that a new source on a reused fd number can collide with while
/// the old one is still being torn down (swift-corelibs-libdispatch #833, #949; seen here once as
/// "Source finalized twice" under rapid churn). Not reusing the number at once avoids it. (The Varlink
/// server's sockets have no Dispatch source of their own and are closed directly.)
func closeDeferred(_ fd: Int32) {
    DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(250)) { _ = Glibc.close(fd) }
}
