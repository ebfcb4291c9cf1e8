import BGTaskProtocol

#if canImport(Glibc)
import Glibc
#endif

extension BenchTool {
    /// Row 5's raw freezes, done the daemon's way without the daemon: `cgroup.freeze` kept open and
    /// written, `cgroup.events` re-read at once, and if not frozen yet, inotify IN_MODIFY awaited with
    /// poll(2) and the file re-read (`notify`); or re-read in a busy loop (`busy`: the kernel's own time,
    /// the floor under both). One freeze per line read on stdin (`notify` or `busy`), its time in ns on a
    /// line of stdout, then the cgroup is thawed; bench/freeze_latency.py interleaves them with the
    /// daemon's freezes and keeps the spacing between them.
    static func freezeBaseline(cgroup: String) {
        let freezeFD = open("\(cgroup)/cgroup.freeze", O_WRONLY | O_CLOEXEC)
        let eventsFD = open("\(cgroup)/cgroup.events", O_RDONLY | O_CLOEXEC)
        let inotify = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard freezeFD >= 0, eventsFD >= 0, inotify >= 0,
              inotify_add_watch(inotify, "\(cgroup)/cgroup.events", UInt32(IN_MODIFY)) >= 0
        else { fail("\(cgroup): \(errnoText())") }
        var events = [UInt8](repeating: 0, count: 128)
        var drained = [UInt8](repeating: 0, count: 4096)
        func frozen() -> Bool {
            let n = events.withUnsafeMutableBytes { pread(eventsFD, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { fail("read cgroup.events: \(errnoText())") }
            // "populated 1\nfrozen 1\n": the digit after "frozen ".
            let key = Array("frozen ".utf8)
            guard n > key.count, let at = (0..<(n - key.count)).first(where: { events[$0..<$0 + key.count].elementsEqual(key) })
            else { return false }
            return events[at + key.count] == UInt8(ascii: "1")
        }
        func drain() {
            while (drained.withUnsafeMutableBytes { read(inotify, $0.baseAddress, $0.count) }) > 0 {}
        }
        func write(_ value: UInt8) {
            var v = value
            guard pwrite(freezeFD, &v, 1, 0) == 1 else { fail("write cgroup.freeze: \(errnoText())") }
        }
        while let line = readLine() {
            let busy = line == "busy"
            guard busy || line == "notify" else { fail("freeze-baseline: expected notify or busy, got \(line)") }
            drain()
            let t0 = monoNS()
            write(UInt8(ascii: "1"))
            if busy {
                while !frozen() {}
            } else if !frozen() {
                var p = pollfd(fd: inotify, events: Int16(POLLIN), revents: 0)
                repeat {
                    guard poll(&p, 1, 2000) > 0 else { fail("\(cgroup): not frozen after 2 s") }
                    drain()
                } while !frozen()
            }
            let t1 = monoNS()
            write(UInt8(ascii: "0"))
            let answer = Array("\(t1 - t0)\n".utf8)
            guard Glibc.write(STDOUT_FILENO, answer, answer.count) == answer.count else { fail("stdout: \(errnoText())") }
        }
    }
}

/// Row 5b's floor for a resume through any service (bench/resume_latency.py, `relay`): a bare server of one
/// connection that, for each message its client sends, writes one message to the app's socket (`appFD`),
/// then `0` to the app's `cgroup.freeze` (kept open, as the daemon keeps it), then answers — the daemon's
/// order (the events in the app's socket before its thaw) with none of its work: two socket hops and the
/// thaw, where the raw baseline has one hop. It ends when its client hangs up.
func resumeRelay(socket path: String, freeze: String, appFD: Int32) -> Never {
    let freezeFD = open(freeze, O_WRONLY | O_CLOEXEC)
    guard freezeFD >= 0 else { fail("open \(freeze): \(errnoText())") }
    let client = accept(listenUnix(path), nil, nil)
    guard client >= 0 else { fail("accept: \(errnoText())") }
    var buffer = [UInt8](repeating: 0, count: 4096)
    let event: [UInt8] = Array("x".utf8)
    let reply: [UInt8] = Array(#"{"parameters":{}}"#.utf8) + [0]
    while true {
        let n = buffer.withUnsafeMutableBytes { read(client, $0.baseAddress, $0.count) }
        if n <= 0 { exit(0) }
        for byte in buffer[0..<n] where byte == 0 {
            writeAll(appFD, event)
            guard pwrite(freezeFD, "0", 1, 0) == 1 else { fail("thaw: \(errnoText())") }
            writeAll(client, reply)
        }
    }
}
