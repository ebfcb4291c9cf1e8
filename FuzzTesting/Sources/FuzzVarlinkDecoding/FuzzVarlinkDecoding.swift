// libFuzzer target: one input is the byte stream a client sends on one connection.
//
// The first byte chooses how the stream is cut into reads (1 to 64 bytes each, as the socket may hand
// them over); the rest goes through the daemon's own decoder (VarlinkInboundDecoder: framing, JSON,
// the call envelope) and every decoded call through the daemon's checks against its interface
// descriptions (VarlinkInterfaceRegistry.check: interface, method, upgrade, parameter types). A crash,
// a trap or a hang here is a crash, a trap or a hang of bgtaskd. Invariants checked as well: a decoded
// call re-encodes to bytes that decode to the same method and flags; and the fast path of the common calls
// (VarlinkFastDecoder) agrees with the full decoder on every message: where it answers, the full decoder
// gives the same call and its checks accept it (a differential fuzz).
import BGTaskProtocol

/// Smaller than the daemon's default (64 KiB) so that the oversized path is reached too.
let maxMessageSize = 4096

let registry: VarlinkInterfaceRegistry = {
    var r = VarlinkInterfaceRegistry()
    for description in [Interfaces.service, Interfaces.app, Interfaces.manager] {
        do { try r.register(description: description) } catch { fatalError("interface description: \(error)") }
    }
    return r
}()

func fuzzOne(_ data: UnsafeRawBufferPointer) {
    guard let first = data.first else { return }
    let chunk = Int(first % 64) + 1
    let stream = UnsafeRawBufferPointer(rebasing: data.dropFirst())
    // Differential: each NUL-terminated message (and the unterminated rest) through both decoders.
    let bytes = stream.bindMemory(to: UInt8.self)
    var from = 0
    while from <= bytes.count {
        var to = from
        while to < bytes.count, bytes[to] != 0 { to += 1 }
        if to - from <= maxMessageSize,
            let why = VarlinkFastDecoder.disagreement(on: UnsafeBufferPointer(rebasing: bytes[from..<to]), registry: registry)
        {
            fatalError("fast and full decoders disagree: \(why)")
        }
        from = to + 1
    }
    var decoder = VarlinkInboundDecoder(maxMessageSize: maxMessageSize)
    var offset = 0
    while offset < stream.count {
        let end = min(stream.count, offset + chunk)
        decoder.append(UnsafeRawBufferPointer(rebasing: stream[offset..<end]))
        offset = end
        while let inbound = decoder.next() {
            switch inbound {
            case .call(let call):
                _ = registry.check(call)
                let bytes = call.encoded()
                guard bytes.last == 0, let again = try? VarlinkCall.decode(bytes.dropLast()) else {
                    fatalError("a decoded call does not decode again after encoding: \(call)")
                }
                if again.method != call.method || again.more != call.more || again.oneway != call.oneway
                    || again.upgrade != call.upgrade || again.parameters.count != call.parameters.count
                {
                    fatalError("round trip changed the call: \(call) -> \(again)")
                }
            case .reject(let error):
                precondition(error.name.hasPrefix("org.varlink.service."))
            case .close:
                return  // the daemon closes the connection: nothing after this is read
            }
        }
    }
}

// `swift build --sanitize=fuzzer` builds this target as a library and links libFuzzer's `main`,
// which calls this for every input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    fuzzOne(UnsafeRawBufferPointer(start: bytes, count: count))
    return 0
}
