import BGTaskConfig
import BGTaskLaunch
import BGTaskVarlink
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// Small, synchronous helpers for the cgroup v2 file system (issue 5). Every call is one open, one
/// read or write and one close of a kernfs file: short enough for the daemon's queue.
enum Cgroup {
    /// `cgroup.events`: whether the cgroup (or a descendant) has processes, and whether it is frozen.
    struct Events: Equatable, Sendable {
        var populated: Bool
        var frozen: Bool
    }

    /// The mount point of the cgroup2 file system in `/proc/self/mounts` text (the first one), with
    /// the octal escapes (`\040` for a space) decoded.
    static func v2Mount(mounts: String) -> String? {
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count >= 3, fields[2] == "cgroup2" else { continue }
            return unescapeMountField(fields[1])
        }
        return nil
    }

    /// The process's cgroup v2 path (`/system.slice/bgtaskd.service`) from `/proc/self/cgroup` text:
    /// the `0::/path` line.
    static func ownPath(selfCgroup: String) -> String? {
        for line in selfCgroup.split(separator: "\n") where line.hasPrefix("0::") {
            var path = String(line.dropFirst(3))
            if path.hasSuffix(" (deleted)") { path = String(path.dropLast(" (deleted)".count)) }
            return path.hasPrefix("/") ? path : nil
        }
        return nil
    }

    static func unescapeMountField(_ field: Substring) -> String {
        let bytes = Array(field.utf8)
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "\\"), i + 3 < bytes.count,
               let a = octal(bytes[i + 1]), let b = octal(bytes[i + 2]), let c = octal(bytes[i + 3])
            {
                out.append(UInt8(truncatingIfNeeded: a * 64 + b * 8 + c))
                i += 4
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func octal(_ b: UInt8) -> Int? {
        (UInt8(ascii: "0")...UInt8(ascii: "7")).contains(b) ? Int(b - UInt8(ascii: "0")) : nil
    }

    /// Parses `cgroup.events` ("populated 1\nfrozen 0\n"). nil when a key is missing. A line counts when
    /// it is two words (runs of bytes other than a space); a value is true when it is `1`. Read on the
    /// bytes (~800 instructions a read, one per freeze and per thaw; split into substrings, ~21,000).
    static func parseEvents(_ text: String) -> Events? {
        var populated: Bool?
        var frozen: Bool?
        var text = text
        text.withUTF8 { b in
            let n = b.count
            var i = 0
            while i < n {
                var end = i
                while end < n, b[end] != UInt8(ascii: "\n") { end += 1 }
                var words = 0
                var key = 0..<0
                var value = 0..<0
                var k = i
                while k < end {
                    while k < end, b[k] == UInt8(ascii: " ") { k += 1 }
                    guard k < end else { break }
                    let start = k
                    while k < end, b[k] != UInt8(ascii: " ") { k += 1 }
                    if words == 0 { key = start..<k } else { value = start..<k }
                    words += 1
                }
                if words == 2 {
                    let one = value.count == 1 && b[value.lowerBound] == UInt8(ascii: "1")
                    if Self.spells(b, key, "populated") {
                        populated = one
                    } else if Self.spells(b, key, "frozen") {
                        frozen = one
                    }
                }
                i = end + 1
            }
        }
        guard let populated, let frozen else { return nil }
        return Events(populated: populated, frozen: frozen)
    }

    /// Whether the bytes `range` of `b` are `word`.
    private static func spells(_ b: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, _ word: StaticString) -> Bool {
        guard range.count == word.utf8CodeUnitCount else { return false }
        let w = word.utf8Start
        for (j, k) in range.enumerated() where b[k] != w[j] { return false }
        return true
    }

    static func events(_ dir: String) -> Events? {
        readFile(dir + "/cgroup.events").flatMap(parseEvents)
    }

    /// The pids in `cgroup.procs` of `dir` (not of its descendants).
    static func procs(_ dir: String) -> [Int32] {
        guard let text = readFile(dir + "/cgroup.procs") else { return [] }
        return text.split(separator: "\n").compactMap { Int32($0) }
    }

    /// The pids of `dir` and every cgroup below it.
    static func procsRecursive(_ dir: String) -> [Int32] {
        var result = procs(dir)
        for child in subdirectories(dir) { result += procsRecursive(dir + "/" + child) }
        return result
    }

    /// Whether `/proc/PID/cgroup` places `pid` in `dir` or below it (`mount`: the cgroup2 mount point).
    /// False when it does not say so (gone, another cgroup namespace's paths): a caller that must be sure
    /// lists the cgroup then.
    static func holds(_ dir: String, pid: Int32, mount: String?) -> Bool {
        guard let mount, let text = FileIO.read("/proc/\(pid)/cgroup") else { return false }
        // The `0::/path` line, found on the bytes (`ownPath` splits the text into Characters).
        let zero = "0::".utf8
        guard let line = text.utf8.split(separator: UInt8(ascii: "\n")).first(where: { $0.starts(with: zero) }) else {
            return false
        }
        let full = CgroupLayout.join(mount, String(Substring(line.dropFirst(zero.count))))
        return full == dir || (full.hasPrefix(dir) && full.utf8.dropFirst(dir.utf8.count).first == UInt8(ascii: "/"))
    }

    /// Whether `dir` is a cgroup v2 directory (cgroup v1 has no `cgroup.events`).
    static func isCgroup2(_ dir: String) -> Bool {
        // By the file system (SPEC §9), not by cgroup.events: the root of a cgroup2 mount has none.
        let fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return isCgroup2(fd: fd)
    }

    /// Writes `text` to `path` in one write(2). Returns 0, or the errno of the failure.
    @discardableResult
    static func write(_ path: String, _ text: String) -> Int32 {
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return errno }
        defer { close(fd) }
        var bytes = Array(text.utf8)
        let n = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        if n < 0 { return errno }
        return n == bytes.count ? 0 : EIO
    }

    /// mkdir(2) that treats an existing directory as success. Returns 0 or errno.
    static func makeDirectory(_ path: String) -> Int32 {
        if mkdir(path, 0o755) == 0 { return 0 }
        let e = errno
        if e == EEXIST, isDirectory(path) { return 0 }
        return e
    }

    static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    /// Names of the child cgroups of `dir`.
    static func subdirectories(_ dir: String) -> [String] {
        guard let d = opendir(dir) else { return [] }
        defer { closedir(d) }
        var names: [String] = []
        while let entry = readdir(d) {
            guard entry.pointee.d_type == UInt8(DT_DIR) else { continue }
            let name = FileIO.name(of: entry)
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// Removes `dir` and the (empty) cgroups below it, deepest first. Returns 0 or the errno of the
    /// first failure (EBUSY: still populated).
    @discardableResult
    static func removeTree(_ dir: String) -> Int32 {
        for child in subdirectories(dir) {
            let e = removeTree(dir + "/" + child)
            if e != 0 { return e }
        }
        if rmdir(dir) == 0 { return 0 }
        return errno == ENOENT ? 0 : errno
    }

    /// Writes `0` to `cgroup.freeze` of `dir` and of every cgroup below it.
    static func thawTree(_ dir: String) {
        write(dir + "/cgroup.freeze", "0")
        for child in subdirectories(dir) { thawTree(dir + "/" + child) }
    }

    /// Kills every process of `dir` and below: `cgroup.kill` (Linux 5.14+), else SIGKILL to each pid.
    /// Both work on frozen processes.
    static func kill(_ dir: String) {
        if write(dir + "/cgroup.kill", "1") == 0 { return }
        for pid in procsRecursive(dir) { _ = Glibc.kill(pid, SIGKILL) }
    }

    /// The cgroup path (`0::` line) of another process, nil when it is gone.
    static func path(ofProcess pid: Int32) -> String? {
        readFile("/proc/\(pid)/cgroup").flatMap(ownPath(selfCgroup:))
    }

    static func errorText(_ e: Int32) -> String { String(cString: strerror(e)) }
}

/// Where the daemon's cgroup subtree is and how it got there.
struct CgroupLayout: Equatable, Sendable {
    enum Origin: String, Sendable {
        /// `CgroupRoot=` names the directory.
        case cgroupRoot = "CgroupRoot="
        /// The daemon's own cgroup, delegated to it (systemd `Delegate=yes`).
        case delegated = "delegated"
    }

    /// Mount point of the cgroup2 file system.
    var mount: String
    /// The subtree the daemon manages (holds `apps/` and possibly `daemon/`).
    var base: String
    var origin: Origin
    /// Whether the daemon must move itself into `base/daemon` (no-internal-processes rule).
    var moveSelf: Bool

    var apps: String { base + "/apps" }
    var daemonLeaf: String { base + "/daemon" }
    func appPath(_ name: String) -> String { apps + "/" + name }

    enum PlanError: Error, Equatable, CustomStringConvertible {
        case noCgroup2Mount
        case unknownOwnCgroup
        case rootCgroup

        var description: String {
            switch self {
            case .noCgroup2Mount: return "no cgroup2 file system in /proc/self/mounts"
            case .unknownOwnCgroup: return "no cgroup v2 entry (0::) in /proc/self/cgroup"
            case .rootCgroup:
                return "the daemon runs in the root cgroup, which is not delegated to it "
                    + "(run it under systemd with Delegate=yes, or set CgroupRoot=)"
            }
        }
    }

    /// Decides the subtree from the configuration and the process's place (pure: tested with text).
    /// - `CgroupRoot=`: that directory (absolute in the file system, or relative to the cgroup2
    ///   mount); the daemon moves into `daemon/` only if it runs in that very cgroup.
    /// - otherwise the daemon's own cgroup, if it is not the root; when the daemon already sits in a
    ///   `daemon` leaf (a restart in the same service cgroup) its parent is the subtree.
    static func plan(cgroupRoot: String?, mounts: String, selfCgroup: String) -> Result<CgroupLayout, PlanError> {
        guard let mount = Cgroup.v2Mount(mounts: mounts) else { return .failure(.noCgroup2Mount) }
        guard let own = Cgroup.ownPath(selfCgroup: selfCgroup) else { return .failure(.unknownOwnCgroup) }
        let ownDir = join(mount, own)
        if let root = cgroupRoot {
            let base = resolve(root, mount: mount)
            return .success(CgroupLayout(mount: mount, base: base, origin: .cgroupRoot, moveSelf: ownDir == base))
        }
        guard own != "/" else { return .failure(.rootCgroup) }
        if own.hasSuffix("/daemon") {
            return .success(
                CgroupLayout(mount: mount, base: String(ownDir.dropLast("/daemon".count)), origin: .delegated, moveSelf: false))
        }
        return .success(CgroupLayout(mount: mount, base: ownDir, origin: .delegated, moveSelf: true))
    }

    /// Whether a cgroup path is one of systemd's units (a slice, service or scope).
    static func managedBySystemd(_ path: String) -> Bool {
        path.split(separator: "/").contains { $0.hasSuffix(".service") || $0.hasSuffix(".scope") || $0.hasSuffix(".slice") }
    }

    /// `CgroupRoot=` read as `AdoptFrom=` is (``CgroupPath/resolve(_:mount:)``).
    static func resolve(_ path: String, mount: String) -> String { CgroupPath.resolve(path, mount: mount) }

    static func join(_ mount: String, _ path: String) -> String {
        if path == "/" || path.isEmpty { return mount }
        return mount + (path.hasPrefix("/") ? path : "/" + path)
    }

    struct SetupError: Error, CustomStringConvertible {
        var description: String
    }

    /// Makes the subtree usable: checks it is cgroup v2, moves the daemon into `daemon/` when needed,
    /// creates `apps/`, and enables the `memory` controller where available (best effort).
    /// Returns notes worth logging.
    func setUp() -> Result<[String], SetupError> {
        var notes: [String] = []
        if origin == .cgroupRoot, access(base, F_OK) != 0 {
            // issue 12: CgroupRoot= may name a directory that does not exist yet; one level is created
            // when its parent is a writable cgroup v2 directory.
            let parent = String(base[..<(base.lastIndex(of: "/") ?? base.endIndex)])
            guard !parent.isEmpty, Cgroup.isCgroup2(parent) else {
                return .failure(SetupError(description: "CgroupRoot=\(base) does not exist and its parent is not a cgroup v2 directory"))
            }
            let e = Cgroup.makeDirectory(base)
            guard e == 0 else {
                return .failure(SetupError(description: "CgroupRoot=\(base) does not exist and cannot be created: \(Cgroup.errorText(e))"))
            }
            notes.append("created CgroupRoot=\(base)")
        }
        guard Cgroup.isCgroup2(base) else {
            return .failure(SetupError(description: "\(base) is not a cgroup v2 directory"))
        }
        guard access(base + "/cgroup.procs", W_OK) == 0 else {
            return .failure(SetupError(description: "\(base) is not writable: \(Cgroup.errorText(errno))"))
        }
        if origin == .delegated, Self.managedBySystemd(base) {
            // systemd marks a cgroup it delegates (Delegate=yes) with this attribute; without it the
            // cgroup is systemd's own, and sub-cgroups made in it would fight with systemd.
            guard XAttr.value(base, "trusted.delegate") == "1" || XAttr.value(base, "user.delegate") == "1" else {
                return .failure(SetupError(
                    description: "\(base) is managed by systemd but not delegated to bgtaskd (Delegate=yes in its unit)"))
            }
            notes.append("\(base) is delegated to bgtaskd by systemd")
        }
        if moveSelf {
            var e = Cgroup.makeDirectory(daemonLeaf)
            if e == 0 { e = Cgroup.write(daemonLeaf + "/cgroup.procs", String(getpid())) }
            if e != 0 {
                return .failure(
                    SetupError(description: "cannot move the daemon into \(daemonLeaf): \(Cgroup.errorText(e))"))
            }
            notes.append("moved the daemon into \(daemonLeaf)")
        }
        let e = Cgroup.makeDirectory(apps)
        guard e == 0 else {
            return .failure(SetupError(description: "cannot create \(apps): \(Cgroup.errorText(e))"))
        }
        guard access(apps + "/cgroup.procs", W_OK) == 0 else {
            return .failure(SetupError(description: "\(apps) is not writable: \(Cgroup.errorText(errno))"))
        }
        // Controllers are optional: the freezer, cgroup.kill and the PSI files need none.
        for dir in [base, apps] {
            let available = readFile(dir + "/cgroup.controllers")?.split(whereSeparator: { $0 == " " || $0 == "\n" }) ?? []
            guard available.contains("memory") else { break }
            let enabled = readFile(dir + "/cgroup.subtree_control")?.split(whereSeparator: { $0 == " " || $0 == "\n" }) ?? []
            if enabled.contains("memory") { continue }
            let w = Cgroup.write(dir + "/cgroup.subtree_control", "+memory")
            notes.append(w == 0 ? "enabled the memory controller below \(dir)"
                                : "could not enable the memory controller below \(dir): \(Cgroup.errorText(w))")
            if w != 0 { break }
        }
        return .success(notes)
    }
}

/// getxattr(2), looked up at run time: Swift's Glibc module does not include <sys/xattr.h>.
enum XAttr {
    private typealias Get = @convention(c) (UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafeMutableRawPointer?, Int) -> Int

    private static let get: Get? = {
        guard let f = dlsym(dlopen(nil, RTLD_NOW), "getxattr") else { return nil }
        return unsafeBitCast(f, to: Get.self)
    }()

    /// The attribute's value as text, nil when it is not set (or cannot be read).
    static func value(_ path: String, _ name: String) -> String? {
        guard let get else { return nil }
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = buffer.withUnsafeMutableBytes { get(path, name, $0.baseAddress, $0.count) }
        guard n >= 0 else { return nil }
        return String(decoding: buffer[0..<n], as: UTF8.self)
    }
}

/// One inotify descriptor watching `cgroup.events` files: the kernel signals a change of `populated` or
/// `frozen` with IN_MODIFY. Read by a Dispatch source on the daemon's queue, or — once
/// `readOnSocketThread` — by the Varlink server's socket thread in its turn (a resume's own thaw then
/// wakes no thread: it is seen when the turn that thawed is over), with the Dispatch source back while
/// the server is paused.
final class CgroupEventsWatcher {
    private let fd: Int32
    private let queue: DispatchQueue
    private var source: (any DispatchSourceRead)?
    private var keyByWD: [Int32: String] = [:]
    private var wdByKey: [String: Int32] = [:]
    /// Called on the queue with the key of a watch whose file changed.
    var onChange: ((String) -> Void)?

    init?(queue: DispatchQueue) {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        self.fd = fd
        self.queue = queue
        startSource()
    }

    deinit {
        if let source {
            let fd = self.fd
            source.setCancelHandler { _ = close(fd) }
            source.cancel()
        } else {
            // Leaves the server's epoll set with its last reference.
            _ = close(fd)
        }
    }

    private func startSource() {
        let s = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        s.setEventHandler { [weak self] in self?.drain() }
        s.resume()
        source = s
    }

    /// Read on `server`'s socket thread from now on (call on the queue); the Dispatch source only while
    /// the server is paused.
    func readOnSocketThread(_ server: VarlinkServer) {
        guard server.watchReadable(fd: fd, handler: { [weak self] in self?.drain() }) else { return }
        source?.cancel()
        source = nil
        server.pauseChanged = { [weak self] paused in
            guard let self else { return }
            if paused, self.source == nil {
                self.startSource()
            } else if !paused {
                self.source?.cancel()
                self.source = nil
            }
        }
    }

    /// Watches `dir/cgroup.events` under `key` (one watch per key; watching again is harmless).
    @discardableResult
    func watch(_ dir: String, key: String) -> Bool {
        if wdByKey[key] != nil { return true }
        let wd = inotify_add_watch(fd, dir + "/cgroup.events", UInt32(IN_MODIFY))
        guard wd >= 0 else { return false }
        keyByWD[wd] = key
        wdByKey[key] = wd
        return true
    }

    /// Whether `dir/cgroup.events` of `key` is watched (its changes from now on are reported).
    func isWatching(key: String) -> Bool { wdByKey[key] != nil }

    func unwatch(key: String) {
        guard let wd = wdByKey.removeValue(forKey: key) else { return }
        keyByWD[wd] = nil
        _ = inotify_rm_watch(fd, wd)
    }

    private func drain() {
        var changed: [String] = []
        for event in readInotifyEvents(fd) {
            guard let key = keyByWD[event.wd] else { continue }
            if event.mask & UInt32(IN_IGNORED) != 0 {
                // The file went away (the cgroup was removed).
                keyByWD[event.wd] = nil
                wdByKey[key] = nil
            }
            if !changed.contains(key) { changed.append(key) }
        }
        for key in changed { onChange?(key) }
    }
}
