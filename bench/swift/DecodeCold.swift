import BGTaskProtocol

#if canImport(Glibc)
import Glibc
#endif

/// One call's decode as the socket thread makes it (the framer, the fast path or the full decoder, the
/// registry's check, the typed parameters), `cycles` times, each after `sleepMS` asleep (0: back to back):
/// docs/performance.md, "Row 5b: the core's part". `manager`: `message` is a `Manager.Foreground` call, else
/// a `BeginBackgroundTask` (both the fast path's when written as clients write them; an unusual spelling,
/// an escape say, takes the full decoder).
func decodeCold(cycles: Int, sleepMS: Int, message: String, manager: Bool) {
    var registry = VarlinkInterfaceRegistry()
    for (_, s) in Interfaces.signatures { registry.register(s) }
    var bytes = Array(message.utf8)
    bytes.append(0)
    var timed: [Int64] = []
    var decoder = VarlinkInboundDecoder(maxMessageSize: 1 << 20)
    for _ in 0..<cycles {
        if sleepMS > 0 { usleep(UInt32(sleepMS * 1000)) }
        let t0 = monoNS()
        decoder.append(bytes)
        guard case .call(let call)? = decoder.next() else { fail("no call") }
        if !registry.checkedByFastPath(call), registry.check(call) != nil { fail("rejected") }
        if manager {
            guard (try? call.decode(ManagerWire.Foreground.self)) != nil else { fail("no Foreground") }
        } else {
            guard (try? call.decode(AppWire.BeginBackgroundTask.self)) != nil else { fail("no Begin") }
        }
        timed.append(monoNS() - t0)
    }
    timed.sort()
    emit(["p50_ns": .int(timed[timed.count / 2]), "p90_ns": .int(timed[timed.count * 9 / 10])])
}
