import BGTaskConfig
import BGTaskCore

#if canImport(Glibc)
import Glibc
#endif

/// SPEC §16: reads how much CPU time an app has used so far (µs, cumulative): its cgroup's `cpu.stat`
/// `usage_usec` (present without the cpu controller) with the cgroup freezer, the `/proc/PID/stat` times
/// (utime, stime and those of reaped children) of its processes otherwise, plus those of its adopted
/// instances' processes. Short reads of kernel files: fine on the daemon's queue.
enum EnergyMeter {
    /// `nil`: nothing could be read (no cgroup, no process).
    /// `mount`: the cgroup2 mount point, with which the app's pid is found in its cgroup from its own
    /// `/proc/PID/cgroup` (one small read) rather than by listing the cgroup's processes and directories.
    static func usage(cgroupPath: String?, mount: String? = nil, pid: Int32?, adopted: [Int32]) -> Int64? {
        var total: Int64?
        func add(_ n: Int64?) { if let n { total = (total ?? 0) + n } }
        var cgroupHoldsPid = false
        if let cgroupPath, let stat = FileIO.read(cgroupPath + "/cpu.stat") {
            add(cpuStatUsage(stat))
            cgroupHoldsPid = pid.map {
                Cgroup.holds(cgroupPath, pid: $0, mount: mount) || Cgroup.procsRecursive(cgroupPath).contains($0)
            } ?? true
        }
        if let pid, !cgroupHoldsPid {
            // A process outside the cgroup (signal freezer, or one that could not be moved into it): its own
            // processes, walked from it, not the machine's whole process table at every reading.
            for p in ProcessTable.descendants(of: pid) ?? SignalFreezer.processTree(root: pid) { add(processUsage(p)) }
        }
        for p in adopted { add(processUsage(p)) }
        return total
    }

    /// `usage_usec` of a `cpu.stat` text.
    static func cpuStatUsage(_ text: String) -> Int64? {
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, parts[0] == "usage_usec" { return Int64(parts[1]) }
        }
        return nil
    }

    /// utime + stime + cutime + cstime of `/proc/PID/stat`, in µs.
    static func processUsage(_ pid: Int32) -> Int64? {
        guard let text = FileIO.read("/proc/\(pid)/stat") else { return nil }
        return statUsage(text, ticksPerSecond: Int64(sysconf(Int32(_SC_CLK_TCK))))
    }

    /// The times of a `/proc/PID/stat` line (fields 14–17, counted after the command's closing parenthesis).
    /// Read in place, byte by byte: splitting the line made an array of its 50 fields at each of the two
    /// readings of every launch.
    static func statUsage(_ text: String, ticksPerSecond: Int64) -> Int64? {
        guard ticksPerSecond > 0 else { return nil }
        var text = text
        return text.withUTF8 { bytes -> Int64? in
            guard let close = bytes.lastIndex(of: UInt8(ascii: ")")) else { return nil }
            // After ") " comes field 3 (state); utime, stime, cutime, cstime are fields 14–17.
            var field = 2, i = close + 1, ticks: Int64 = 0
            while i < bytes.count, field < 17 {
                while i < bytes.count, bytes[i] == UInt8(ascii: " ") { i += 1 }
                guard i < bytes.count else { break }
                field += 1
                if field >= 14 {
                    var n: Int64 = 0, digits = 0
                    while i < bytes.count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") {
                        n = n * 10 + Int64(bytes[i] - UInt8(ascii: "0"))
                        digits += 1
                        i += 1
                    }
                    guard digits > 0, digits <= 18, i == bytes.count || bytes[i] == UInt8(ascii: " ")
                        || bytes[i] == UInt8(ascii: "\n") else { return nil }
                    ticks += n
                } else {
                    while i < bytes.count, bytes[i] != UInt8(ascii: " ") { i += 1 }
                }
            }
            return field == 17 ? ticks * 1_000_000 / ticksPerSecond : nil
        }
    }
}
