import BGTaskConfig

#if canImport(Glibc)
import Glibc
#endif

/// SPEC §14, `KernelWakeLock=yes`: on autosleep devices (Android-style kernels) the kernel wake lock
/// `bgtaskd` keeps the system awake while live background work exists: its name written to
/// `/sys/power/wake_lock` takes it, to `/sys/power/wake_unlock` releases it. Short sysfs writes.
final class KernelWakeLock {
    static let name = "bgtaskd"
    /// The directory holding `wake_lock` and `wake_unlock` (a unit test points it elsewhere).
    let directory: String
    private(set) var held = false
    /// Writes made (takes and releases), for tests.
    private(set) var writes = 0
    /// The last write's error, said once per kind of failure.
    private(set) var lastError: String?

    init(directory: String = "/sys/power") {
        self.directory = directory
    }

    /// Takes (`true`) or releases the lock; nil on success, else the error (file and errno).
    @discardableResult
    func set(_ hold: Bool) -> String? {
        guard hold != held else { return nil }
        let path = directory + (hold ? "/wake_lock" : "/wake_unlock")
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return failed(path) }
        defer { close(fd) }
        let written = Self.name.withCString { write(fd, $0, strlen($0)) }
        guard written == Self.name.utf8.count else { return failed(path) }
        held = hold
        writes += 1
        lastError = nil
        return nil
    }

    private func failed(_ path: String) -> String {
        let text = "cannot write \(path): \(String(cString: strerror(errno)))"
        lastError = text
        return text
    }
}
