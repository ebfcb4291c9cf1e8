// SPEC §14: the facts the shell observes about an app's locks and a freeze that does not complete.

/// One lock an app's process holds that a process outside the app waits for (a `->` line of
/// `/proc/locks` under the app's lock).
public struct LockContention: Hashable, Sendable, Codable, CustomStringConvertible {
    /// `POSIX`, `FLOCK`, `OFDLCK`, `LEASE`, … as `/proc/locks` names it.
    public var kind: String
    /// The locked file's device, `MAJ:MIN` as `/proc/locks` writes it (hexadecimal).
    public var device: String
    /// The locked file's inode.
    public var inode: UInt64
    /// The app's process that holds it (`nil`: an OFD lock whose holder was not found).
    public var holder: Int32?
    /// The waiting process (`nil`: an OFD waiter, which `/proc/locks` shows as pid -1).
    public var waiter: Int32?

    /// A contention.
    public init(kind: String, device: String, inode: UInt64, holder: Int32?, waiter: Int32?) {
        self.kind = kind
        self.device = device
        self.inode = inode
        self.holder = holder
        self.waiter = waiter
    }

    /// `FLOCK 00:1a:12345 held by 42, waited for by 43`.
    public var description: String {
        let held = holder.map { " held by pid \($0)" } ?? ""
        let waits = waiter.map { "pid \($0)" } ?? "an OFD lock owner (pid unknown)"
        return "\(kind) lock on \(device):\(inode)\(held), waited for by \(waits)"
    }
}

/// What the shell saw in `/proc/locks` for an app's processes (``Input/locksObserved(_:_:)``).
public struct LockObservation: Hashable, Sendable, Codable {
    /// How many locks the app's processes hold (contended or not).
    public var held: Int
    /// The held locks others wait for, in `/proc/locks` order.
    public var contended: [LockContention]

    /// An observation; the default: no lock at all.
    public init(held: Int = 0, contended: [LockContention] = []) {
        self.held = held
        self.contended = contended
    }
}

/// A process of an app that did not stop when its freeze was due (``Input/freezeStalled(_:_:)``).
public struct StalledProcess: Hashable, Sendable, Codable, CustomStringConvertible {
    /// Its pid.
    public var pid: Int32
    /// Its name (`/proc/PID/comm`).
    public var name: String
    /// Where in the kernel it sleeps (`/proc/PID/wchan`; empty when unknown).
    public var wchan: String

    /// A stalled process.
    public init(pid: Int32, name: String, wchan: String) {
        self.pid = pid
        self.name = name
        self.wchan = wchan
    }

    /// `1234 (cat) in request_wait_answer`.
    public var description: String { "\(pid) (\(name)) in \(wchan.isEmpty ? "?" : wchan)" }
}
