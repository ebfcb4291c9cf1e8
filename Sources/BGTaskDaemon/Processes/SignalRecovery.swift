import BGTaskConfig
import BGTaskCore
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The signal freezer's memory of what it stopped (issue 5), so that a daemon restarted after a crash
/// leaves no process stopped with nobody managing it: one small file per frozen app under the runtime
/// directory (`/run/bgtaskd/stopped/<app-id>`, tmpfs: a reboot forgets it, as it forgets the pids),
/// one line `pid starttime` per process, written when the app is stopped and removed when it is
/// continued, killed or gone.
///
/// Policy on start (like the cgroup freezer's, Recovery.swift): a process still stopped from a previous
/// run is killed (SIGKILL, then SIGCONT), as a suspended app is terminated, without events; the start
/// time from /proc/<pid>/stat guards against a reused pid. One journal entry per app,
/// `BGTASKD_DECISION=terminate` `BGTASKD_REASON=daemon-restarted`. Running processes of a previous run
/// are not tracked by the signal backend and are left alone.
final class StoppedProcessRecords {
    let directory: String
    let logger: Logger

    init(directory: String, logger: Logger) {
        self.directory = directory
        self.logger = logger
    }

    func stopped(app: AppID, pids: [Int32]) {
        guard !pids.isEmpty else { return }
        _ = mkdir(directory, 0o700)
        let lines = pids.compactMap { pid in Self.startTime(pid).map { "\(pid) \($0)\n" } }.joined()
        let path = directory + "/" + app.rawValue
        let temporary = path + ".tmp"
        guard Self.writeNew(temporary, lines) else {
            logger.warning("cannot record the stopped processes of \(app) in \(path): \(Cgroup.errorText(errno))")
            return
        }
        rename(temporary, path)
    }

    func cleared(app: AppID) {
        unlink(directory + "/" + app.rawValue)
    }

    /// Kills what a previous run left stopped, journals it, forgets the records.
    func recover() {
        guard let dir = opendir(directory) else { return }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = FileIO.name(of: entry)
            if name != "." && name != ".." { names.append(name) }
        }
        closedir(dir)
        for name in names.sorted() {
            let path = directory + "/" + name
            defer { unlink(path) }
            guard !name.hasSuffix(".tmp"), let text = readFile(path) else { continue }
            var killed: [Int32] = []
            for line in text.split(separator: "\n") {
                let fields = line.split(separator: " ")
                guard fields.count == 2, let pid = Int32(fields[0]), let start = UInt64(fields[1]),
                      Self.startTime(pid) == start
                else { continue }
                _ = kill(pid, SIGKILL)
                _ = kill(pid, SIGCONT)
                killed.append(pid)
            }
            guard !killed.isEmpty else { continue }
            RestartJournal.record(
                logger, app: name, pids: killed, previousState: "suspended",
                "bgtaskd restarted: \(name) was left stopped (SIGSTOP) by the previous run with nobody managing it; "
                    + "killed its \(killed.count) process(es) (\(killed.map(String.init).joined(separator: " "))) without events")
        }
    }

    private static func writeNew(_ path: String, _ text: String) -> Bool {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var bytes = Array(text.utf8)
        return bytes.withUnsafeMutableBytes { write(fd, $0.baseAddress, $0.count) } == bytes.count
    }

    /// Field 22 of /proc/<pid>/stat (start time in clock ticks since boot); nil when gone or a zombie.
    static func startTime(_ pid: Int32) -> UInt64? {
        guard let stat = readFile("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // fields[0] is the state (field 3), so field 22 is fields[19].
        guard fields.count > 19, fields[0] != "Z" else { return nil }
        return UInt64(fields[19])
    }
}
