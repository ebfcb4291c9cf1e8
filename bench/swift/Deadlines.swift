import BGTaskProtocol
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Deadline precision of the daemon (row 3).
///
/// The apps are connections that checked in by hand (their CheckIn stream fds were connected by a helper
/// process and passed in, so the daemon's peer credentials name the helper, not this process).
/// - "aware" apps (LifecycleAware=yes) each hold `perApp` background tasks begun on separate call
///   connections. Backgrounded, each acknowledges did-enter-background at once; at budget − warning the
///   daemon sends background-task-will-expire for every task, and the app ends each task as its expiration
///   handler would, after which the daemon suspends it.
/// - "idle" apps (LifecycleAware=no, no task) are suspended when their grace window ends.
/// App k of each kind is backgrounded at t0 + k·spacing (idle ones half a spacing later). Measured against
/// the due instants the daemon itself computed:
/// - `stream_expire`: arrival of each background-task-will-expire on its CheckIn stream − (deadlineUSec − warning);
/// - `monitor_expire`: the daemon's record of each expire decision (Monitor's realtimeUSec, converted to
///   CLOCK_MONOTONIC with the offset measured here) − the same due instant;
/// - `monitor_suspend`: an idle app's suspension − (its background decision + grace);
/// - `expire_to_suspend`: an aware app's suspension − its expiration due instant (the whole loop: timer,
///   events, the app's EndBackgroundTask calls, the suspension).
func runDeadlineClient(_ o: Options) {
    let path = o.string("socket")
    let aware = readLines(o.string("apps-file"))
    let idle = readLines(o.string("idle-apps-file"))
    let apps = aware + idle
    let streamFDs = o.list("stream-fds").compactMap { Int32($0) }
    guard streamFDs.count == apps.count else { fail("\(streamFDs.count) stream fds for \(apps.count) apps") }
    let perApp = o.int("per-app")
    let spacing = Int64(o.int("spacing-us")) * 1000
    let warning = Int64(o.int("warning-us")) * 1000
    let grace = Int64(o.int("grace-us")) * 1000
    let callConnections = o.int("call-connections", 8)

    let offsetBefore = realNS() - monoNS()

    // Check in every app on its stream.
    var readers: [Int32: MessageReader] = [:]
    var appOfFD: [Int32: Int] = [:]
    for (k, fd) in streamFDs.enumerated() {
        setNonBlocking(fd, false)
        writeAll(fd, Array(#"{"method":"io.bgtaskd.App.CheckIn","parameters":{"appId":"\#(apps[k])"},"more":true}"#.utf8) + [0])
        let r = MessageReader(capacity: 1 << 14)
        guard let first = r.next(fd) else { fail("CheckIn of \(apps[k]): connection closed") }
        if contains(first, "\"error\"") {
            fail("CheckIn of \(apps[k]): \(String(decoding: UnsafeRawBufferPointer(rebasing: first[...]), as: UTF8.self))")
        }
        readers[fd] = r
        appOfFD[fd] = k
    }

    // Begin perApp tasks per aware app, pipelined on the call connections.
    let calls = (0..<callConnections).map { _ in connectUnix(path) }
    let callReaders = calls.map { _ in MessageReader() }
    var tasksOf = [[Int64]](repeating: [], count: apps.count)
    var denied = 0
    for (c, fd) in calls.enumerated() {
        var batch: [UInt8] = []
        var order: [Int] = []
        func flushBatch() {
            writeAll(fd, batch)
            for k in order {
                guard let m = callReaders[c].next(fd) else { fail("BeginBackgroundTask: connection closed") }
                let task = intField(m, "\"taskId\"") ?? 0
                if task > 0 { tasksOf[k].append(task) } else { denied += 1 }
            }
            batch.removeAll(keepingCapacity: true)
            order.removeAll(keepingCapacity: true)
        }
        for k in stride(from: c, to: aware.count, by: callConnections) {
            for _ in 0..<perApp {
                batch += CallShapes(app: apps[k]).begin
                order.append(k)
                if order.count == 128 { flushBatch() }
            }
        }
        if !order.isEmpty { flushBatch() }
    }
    let liveAssertions = tasksOf.reduce(0) { $0 + $1.count }

    // Monitor from now on (not earlier: the set-up's decisions would fill its buffer).
    let monitor = connectUnix(path)
    writeAll(monitor, Array(#"{"method":"io.bgtaskd.Manager.Monitor","more":true}"#.utf8) + [0])
    let monitorReader = MessageReader(capacity: 1 << 20)

    let ep = Epoll(capacity: 512)
    for fd in streamFDs { ep.add(fd) }
    for fd in calls { ep.add(fd) }
    ep.add(monitor)

    // Background the apps one by one from a thread of its own: aware app k at t0 + k·spacing, idle app k
    // half a spacing later.
    let t0 = monoNS() + 100_000_000
    let backgroundConnection = connectUnix(path)
    var schedule: [(at: Int64, app: String)] = []
    for (k, a) in aware.enumerated() { schedule.append((t0 + Int64(k) * spacing, a)) }
    for (k, a) in idle.enumerated() { schedule.append((t0 + Int64(k) * spacing + spacing / 2, a)) }
    schedule.sort { $0.at < $1.at }
    let plan = schedule
    let backgroundLate = Mutex<[Int64]>([])
    let backgrounder = startThread {
        let r = MessageReader()
        var late: [Int64] = []
        for (at, app) in plan {
            sleepUntil(at)
            late.append(monoNS() - at)
            writeAll(backgroundConnection, Array(#"{"method":"io.bgtaskd.Manager.Background","parameters":{"appId":"\#(app)"}}"#.utf8) + [0])
            guard let m = r.next(backgroundConnection) else { fail("Background: connection closed") }
            if contains(m, "\"error\"") { fail("Background \(app) failed") }
        }
        backgroundLate.withLock { $0 = late }
    }

    var indexOfApp: [String: Int] = [:]
    for (i, a) in apps.enumerated() { indexOfApp[a] = i }
    var expireDue = [Int64](repeating: 0, count: apps.count)  // ns monotonic
    var backgroundReal = [Int64](repeating: 0, count: apps.count)
    var streamExpire: [Int64] = []
    var monitorExpire: [(app: Int, real: Int64)] = []
    var monitorSuspend: [(app: Int, real: Int64)] = []
    var terminations = 0
    var otherEvents = 0
    var endErrors = 0
    var acks = 0
    let expected = liveAssertions
    let giveUp = t0 + Int64(aware.count + 1) * spacing + grace + warning + 5_000_000_000
    var nextCall = 0
    func callConnection() -> Int32 {
        nextCall += 1
        return calls[nextCall % calls.count]
    }
    while monoNS() < giveUp {
        if streamExpire.count >= expected && monitorSuspend.count >= apps.count && monitorExpire.count >= expected { break }
        for fd in ep.ready(timeoutMS: 100) {
            if let r = readers[fd], let k = appOfFD[fd] {
                let got = r.fill(fd)
                let arrival = monoNS()
                if got <= 0 {
                    ep.remove(fd)
                    continue
                }
                while let m = r.nextBuffered() {
                    if contains(m, "background-task-will-expire") {
                        guard let deadline = intField(m, "\"deadlineUSec\""), let task = intField(m, "\"taskId\"") else { continue }
                        expireDue[k] = deadline * 1000 - warning
                        streamExpire.append(arrival - expireDue[k])
                        // The app's expiration handler ends the task at once.
                        writeAll(callConnection(), CallShapes(app: apps[k]).end(task))
                    } else if contains(m, "did-enter-background"), let event = intField(m, "\"id\"") {
                        writeAll(callConnection(), Array(#"{"method":"io.bgtaskd.App.Acknowledge","parameters":{"eventId":\#(event)}}"#.utf8) + [0])
                        acks += 1
                    } else {
                        otherEvents += 1
                    }
                }
            } else if fd == monitor {
                let got = monitorReader.fill(fd)
                if got <= 0 { fail("Monitor stream closed by the daemon") }
                while let m = monitorReader.nextBuffered() {
                    guard let reply = decodeReply(m), let d = reply.parameters["decision"] else { continue }
                    let kind = d["decision"]?.stringValue ?? ""
                    guard let app = d["appId"]?.stringValue, let real = d["realtimeUSec"]?.intValue,
                        let k = indexOfApp[app]
                    else { continue }
                    switch kind {
                    case "expire": monitorExpire.append((k, real * 1000))
                    case "suspend": monitorSuspend.append((k, real * 1000))
                    case "background": backgroundReal[k] = real * 1000
                    case "terminate": terminations += 1
                    default: break
                    }
                }
            } else if let c = calls.firstIndex(of: fd) {
                let got = callReaders[c].fill(fd)
                if got <= 0 { fail("call connection closed by the daemon") }
                while let m = callReaders[c].nextBuffered() {
                    if contains(m, "\"error\"") { endErrors += 1 }
                }
            }
        }
    }
    joinThread(backgrounder)
    let offsetAfter = realNS() - monoNS()
    let offset = (offsetBefore + offsetAfter) / 2
    var monitorExpireLate: [Int64] = []
    var monitorSuspendLate: [Int64] = []
    var expireToSuspend: [Int64] = []
    var unknownDue = 0
    for (k, real) in monitorExpire {
        guard expireDue[k] > 0 else { unknownDue += 1; continue }
        monitorExpireLate.append(real - offset - expireDue[k])
    }
    for (k, real) in monitorSuspend {
        if k < aware.count {
            guard expireDue[k] > 0 else { unknownDue += 1; continue }
            expireToSuspend.append(real - offset - expireDue[k])
        } else {
            guard backgroundReal[k] > 0 else { unknownDue += 1; continue }
            monitorSuspendLate.append(real - (backgroundReal[k] + grace))
        }
    }
    emit([
        "apps": .int(Int64(apps.count)), "live_assertions": .int(Int64(liveAssertions)), "denied": .int(Int64(denied)),
        "stream_expire_ns": ints(streamExpire), "monitor_expire_ns": ints(monitorExpireLate),
        "monitor_suspend_ns": ints(monitorSuspendLate), "expire_to_suspend_ns": ints(expireToSuspend),
        "terminations": .int(Int64(terminations)), "acks": .int(Int64(acks)),
        "other_events": .int(Int64(otherEvents)), "call_errors": .int(Int64(endErrors)),
        "unknown_due": .int(Int64(unknownDue)), "clock_offset_drift_ns": .int(offsetAfter - offsetBefore),
        "background_call_late_ns": ints(backgroundLate.withLock { $0 }),
    ])
}

/// The baseline of row 3: what a bare timer achieves on this machine with the same schedule.
///
/// One strict Dispatch timer on a serial queue, re-armed for the next due instant exactly as the daemon
/// arms its one timer (leeway 50 µs); `count` due instants `spacing` apart, each fanned out as `fanout`
/// 32-byte messages over a Unix socket pair to a reader thread. `timer_ns`: handler entry − due;
/// `arrival_ns`: message arrival at the reader − due (the analogue of an event reaching its app).
final class TimerBaseline: @unchecked Sendable {
    // @unchecked: the mutable state is touched only on `queue` (and `arrivals` only by the reader).
    let queue = DispatchQueue(label: "bench.timer")
    var timer: (any DispatchSourceTimer)?
    var dues: [Int64] = []
    var next = 0
    var late: [Int64] = []
    let fanout: Int
    let writeFD: Int32
    let done = DispatchSemaphore(value: 0)

    init(dues: [Int64], fanout: Int, writeFD: Int32) {
        self.dues = dues
        self.fanout = fanout
        self.writeFD = writeFD
    }

    func start() {
        queue.async { [self] in
            let t = DispatchSource.makeTimerSource(flags: .strict, queue: queue)
            t.setEventHandler { [weak self] in self?.fired() }
            timer = t
            arm()
            t.resume()
        }
    }

    private func arm() {
        let delay = max(0, dues[next] - monoNS())
        timer?.schedule(deadline: .now() + .nanoseconds(Int(delay)), leeway: .microseconds(50))
    }

    private func fired() {
        let now = monoNS()
        // An instant's messages in one write, as the daemon writes an instant's events to a stream.
        var messages: [Int64] = []
        while next < dues.count, dues[next] <= now {
            late.append(now - dues[next])
            for _ in 0..<fanout { messages += [dues[next], 0, 0, 0] }
            next += 1
        }
        if !messages.isEmpty { messages.withUnsafeBytes { writeAll(writeFD, $0) } }
        if next < dues.count { arm() } else {
            timer?.cancel()
            done.signal()
        }
    }
}

func runTimerBaseline(_ o: Options) {
    let count = o.int("count")
    let spacing = Int64(o.int("spacing-us")) * 1000
    let lead = Int64(o.int("lead-us")) * 1000
    let fanout = o.int("fanout")
    var pair: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
        fail("socketpair: \(errnoText())")
    }
    let readFD = pair[0]
    let total = count * fanout
    let arrivals = Mutex<[Int64]>([])
    let reader = startThread {
        var got: [Int64] = []
        got.reserveCapacity(total)
        // What one read brings, stamped at its arrival, as the deadline client stamps a stream's events.
        var buffer = [UInt8](repeating: 0, count: 4096)
        var held = 0
        while got.count < total {
            let n = buffer.withUnsafeMutableBytes { read(readFD, $0.baseAddress! + held, $0.count - held) }
            if n <= 0 { fail("baseline reader: \(errnoText())") }
            let arrival = monoNS()
            held += n
            let whole = held / 32 * 32
            buffer.withUnsafeBytes { raw in
                for off in stride(from: 0, to: whole, by: 32) {
                    got.append(arrival - raw.loadUnaligned(fromByteOffset: off, as: Int64.self))
                }
            }
            if whole > 0 {
                buffer.replaceSubrange(0..<(held - whole), with: buffer[whole..<held])
                held -= whole
            }
        }
        arrivals.withLock { $0 = got }
    }
    let t0 = monoNS() + lead
    let b = TimerBaseline(dues: (0..<count).map { t0 + Int64($0) * spacing }, fanout: fanout, writeFD: pair[1])
    b.start()
    b.done.wait()
    joinThread(reader)
    let late = b.queue.sync { b.late }
    emit(["timer_ns": ints(late), "arrival_ns": ints(arrivals.withLock { $0 })])
}
