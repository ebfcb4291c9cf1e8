import BGTaskModel
import BGTaskConfig
import BGTaskCore
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// Automatic external-power detection (SPEC §6) from `/sys/class/power_supply`.
///
/// Read at start; then, where the machine has power supplies at all, re-read when the kernel announces a
/// `power_supply` change (a `NETLINK_KOBJECT_UEVENT` socket, as udev listens), or every
/// ``pollInterval`` where no such socket can be opened (a container without uevents). A machine without
/// power supplies (a VM, a container) is never polled: `SetConditions` is then the only source.
final class PowerSupplyMonitor: @unchecked Sendable {
    // @unchecked: used only on `queue`.
    let path: String
    private let queue: DispatchQueue
    private let onChange: (Bool) -> Void
    private var last: Bool?
    private var source: (any DispatchSourceRead)?
    private var poller: (any DispatchSourceTimer)?
    static let pollInterval: DispatchTimeInterval = .seconds(30)

    /// How the monitor follows changes (for the log).
    private(set) var mode = "none"

    init(path: String = "/sys/class/power_supply", queue: DispatchQueue, onChange: @escaping (Bool) -> Void) {
        self.path = path
        self.queue = queue
        self.onChange = onChange
    }

    /// The current reading (nil: no power supply says anything) and starts following changes if there is one.
    func start() -> Bool? {
        let readings = Self.read(path)
        last = PowerSupplyReading.onExternalPower(readings)
        guard !readings.isEmpty else { return last }
        if let fd = Self.openUevents() {
            let s = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
            s.setEventHandler { [weak self] in self?.drainUevents(fd) }
            s.setCancelHandler { close(fd) }
            s.resume()
            source = s
            mode = "uevents"
        } else {
            let t = DispatchSource.makeTimerSource(queue: queue)
            t.schedule(deadline: .now() + Self.pollInterval, repeating: Self.pollInterval, leeway: .seconds(5))
            t.setEventHandler { [weak self] in self?.check() }
            t.resume()
            poller = t
            mode = "polling"
        }
        return last
    }

    func stop() {
        source?.cancel()
        poller?.cancel()
        source = nil
        poller = nil
    }

    /// Re-reads the supplies; reports a change of the detected value.
    func check() {
        let now = PowerSupplyReading.onExternalPower(Self.read(path))
        guard let now, now != last else { return }
        last = now
        onChange(now)
    }

    private func drainUevents(_ fd: Int32) {
        var buf = [UInt8](repeating: 0, count: 8192)
        var relevant = false
        while true {
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n <= 0 { break }
            // "change@/devices/.../power_supply/AC\0ACTION=change\0...SUBSYSTEM=power_supply\0..."
            if String(decoding: buf[0..<n], as: UTF8.self).containsBytes("power_supply") { relevant = true }
        }
        if relevant { check() }
    }

    /// A non-blocking socket bound to the kernel's uevent multicast group, or nil.
    static func openUevents() -> Int32? {
        let fd = socket(AF_NETLINK, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 15)  // NETLINK_KOBJECT_UEVENT
        guard fd >= 0 else { return nil }
        // struct sockaddr_nl { sa_family_t nl_family; unsigned short nl_pad; __u32 nl_pid; __u32 nl_groups; }
        var address = [UInt8](repeating: 0, count: 12)
        address.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: UInt16(AF_NETLINK), toByteOffset: 0, as: UInt16.self)
            raw.storeBytes(of: UInt32(1), toByteOffset: 8, as: UInt32.self)  // group 1: the kernel's uevents
        }
        let bound = address.withUnsafeBytes { raw -> Int32 in
            guard let base = raw.baseAddress else { return -1 }
            return bind(fd, base.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
        guard bound == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Every supply under `path`: its `type`, `online` and `status` files.
    static func read(_ path: String) -> [PowerSupplyReading] {
        guard let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = FileIO.name(of: entry)
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted().compactMap { name in
            let base = path + "/" + name + "/"
            guard let type = readFile(base + "type") else { return nil }
            return PowerSupplyReading(type: type, online: readFile(base + "online"), status: readFile(base + "status"))
        }
    }
}
