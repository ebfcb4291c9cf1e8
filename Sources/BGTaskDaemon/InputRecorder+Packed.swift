import BGTaskCore
import BGTaskProtocol

// SPEC §17: the ring keeps its inputs packed as the core takes them. An entry as a Swift value is 224 bytes
// and points to its strings (~64 bytes more); packed, the common inputs (the calls apps make most, the
// launches, exits, freezes and deadlines) take 12–60 bytes: the times as differences from the entry before,
// the identifiers as variable-length integers, the strings' bytes (an app named by the packed entry before
// is one byte). The others are kept as values beside the bytes, and once their block is full the daemon
// encodes them compactly off its queue (InputRecorder+Compact.swift). So `RecordMaxBytes=` holds about ten
// times as many inputs, and the ring takes checkpoints that much less often. `PackedInputTests` reads back
// every packed case.
extension InputRecorder {
    /// A block of the ring's inputs, in order: each a packed entry in ``bytes``, or a mark there and the
    /// entry in ``others``.
    struct Block: Sendable {
        /// The packed entries (a capacity allocated whole when the block begins).
        private(set) var bytes: [UInt8] = []
        /// The entries not packed, in order.
        private(set) var others: Others = .live([])
        /// Estimated bytes the live ``others`` point to.
        private(set) var othersIndirect = 0
        /// Entries in the block.
        private(set) var count = 0
        private var lastMonotonic: Int64 = 0
        private var lastOffset: Int64 = 0
        /// What the packed entries before named (an app, a name, a request, origins): named again, fewer bytes.
        private var context = PackContext()

        /// The entries kept as values, until encoded.
        enum Others: Sendable {
            case live([Entry])
            /// ``InputRecorder/encode(block:)`` of `count` entries.
            case compact([UInt8], count: Int)
        }

        /// A block that packs into `capacity` bytes.
        init(capacity: Int) { bytes.reserveCapacity(capacity) }

        /// Bytes in memory (estimated for the live others: their values and what they point to).
        var memory: Int {
            switch others {
            case .live(let entries): return bytes.capacity + entries.capacity * MemoryLayout<Entry>.stride + othersIndirect
            case .compact(let encoded, _): return bytes.capacity + encoded.count
            }
        }

        /// Whether the block is full: its bytes within a few of their capacity, or `maxOthers` entries kept
        /// as values.
        func isFull(maxOthers: Int) -> Bool {
            if bytes.count + 16 > bytes.capacity { return true }
            if case .live(let entries) = others { return entries.count >= maxOthers }
            return false
        }

        /// Whether `input` surely fits in what the bytes' capacity has left: a block is sealed before an
        /// entry that might not (an array grows by doubling); only an entry larger than a whole block grows
        /// one.
        func fits(_ input: CoreInput) -> Bool { bytes.count + Packed.bound(input) <= bytes.capacity }

        /// Others still as values (to be encoded once the block is full).
        var liveOthers: [Entry]? {
            if case .live(let entries) = others, !entries.isEmpty { return entries }
            return nil
        }

        /// Gives back what the bytes' capacity holds beyond twice their count (a block sealed early).
        mutating func shrink() {
            guard bytes.count < bytes.capacity / 2 else { return }
            bytes = InputRecorder.exact(bytes, spareAllowed: 0)
        }

        mutating func compactedOthers(_ encoded: [UInt8]) {
            guard case .live(let entries) = others else { return }
            others = .compact(encoded, count: entries.count)
            othersIndirect = 0
        }

        /// Appends an entry: packed if its input has a packed form, else kept as a value (`indirect`: what
        /// the value points to, estimated).
        mutating func append(_ input: CoreInput, monotonic: Int64, realtime: Int64, fingerprint: Int, actionCount: Int,
                             indirect: (CoreInput) -> Int) {
            count += 1
            var w = Writer(bytes: [])
            swap(&w.bytes, &bytes)
            swap(&w.context, &context)
            defer {
                swap(&w.bytes, &bytes)
                swap(&w.context, &context)
            }
            let tag = Packed.tag(input)
            w.byte(tag)
            guard tag != 0 else {
                guard case .live(var entries) = others else { preconditionFailure("others appended after they were encoded") }
                others = .live([])
                entries.append(Entry(input: input, monotonic: monotonic, realtime: realtime, fingerprint: fingerprint,
                                     actionCount: actionCount))
                others = .live(entries)
                othersIndirect += indirect(input)
                return
            }
            let offset = realtime &- monotonic
            w.signed(monotonic &- lastMonotonic)
            w.signed(offset &- lastOffset)
            w.fixed(UInt64(bitPattern: Int64(fingerprint)))
            w.unsigned(UInt64(actionCount))
            Packed.write(input, to: &w)
            lastMonotonic = monotonic
            lastOffset = offset
        }

        mutating func append(_ e: Entry, indirect: Int) {
            append(e.input, monotonic: e.monotonic, realtime: e.realtime, fingerprint: e.fingerprint, actionCount: e.actionCount,
                   indirect: { _ in indirect })
        }

        /// The packed bytes (tests).
        var packedBytes: [UInt8] { bytes }

        /// The block's entries, in order.
        func entries() throws -> [Entry] {
            switch others {
            case .live(let entries): return try Self.unpack(bytes, count: count, others: entries)
            case .compact(let encoded, _): return try Self.unpack(bytes, count: count, others: InputRecorder.decode(block: encoded))
            }
        }

        /// The `count` entries of packed `bytes`, with `others` in the places marked for them.
        static func unpack(_ bytes: [UInt8], count: Int, others: [Entry]) throws -> [Entry] {
            var all: [Entry] = []
            all.reserveCapacity(count)
            var r = Reader(bytes: bytes)
            var nextOther = 0
            var monotonic: Int64 = 0, offset: Int64 = 0
            while !r.atEnd {
                let tag = try r.byte()
                if tag == 0 {
                    guard nextOther < others.count else { throw PackedError.truncated }
                    all.append(others[nextOther])
                    nextOther += 1
                    continue
                }
                monotonic &+= try r.signed()
                offset &+= try r.signed()
                let fingerprint = Int(Int64(bitPattern: try r.fixed()))
                let actionCount = Int(try r.unsigned())
                let input = try Packed.read(tag: tag, from: &r)
                all.append(Entry(input: input, monotonic: monotonic, realtime: monotonic &+ offset,
                                 fingerprint: fingerprint, actionCount: actionCount))
            }
            guard all.count == count, nextOther == others.count else { throw PackedError.truncated }
            return all
        }
    }

    enum PackedError: Error {
        case truncated
        case badTag(UInt8)
        case badValue
    }
}

/// The inputs packed, by tag (1–31: the lifecycle machine's, with the call's request and origin; 32 on:
/// the composite's own; 0: kept as a value).
private enum Packed {
    static func tag(_ input: CoreInput) -> UInt8 {
        switch input {
        case .lifecycle(let i, _, _):
            switch i {
            case .assertionRequested: return 1
            case .assertionEndRequested: return 2
            case .foregroundRequested: return 3
            case .backgroundRequested: return 4
            case .launchRequested: return 5
            case .appLaunched: return 6
            case .appCheckedIn: return 7
            case .connectionClosed: return 8
            case .processExited: return 9
            case .freezeConfirmed: return 10
            case .deadlineReached: return 11
            case .eventAcknowledged: return 12
            case .locksObserved(_, let o): return o.contended.isEmpty ? 13 : 0
            case .appCallReceived: return 14
            case .terminateRequested: return 15
            default: return 0
            }
        case .deadlineReached: return 32
        case .wallDeadlineReached: return 33
        case .freezeStarted: return 34
        case .freezeChecked: return 35
        case .freezePartDone: return 36
        default: return 0
        }
    }

    /// At most the bytes `input`'s entry takes: its numbers and lengths (under 128 bytes), an app ID (at most
    /// 255), and its other strings whole.
    static func bound(_ input: CoreInput) -> Int {
        let numbers = 128, appID = 256
        switch input {
        case .lifecycle(let i, _, _):
            switch i {
            case .assertionRequested(_, _, let name): return numbers + appID + (name?.utf8.count ?? 0)
            case .appCallReceived(_, let method, _): return numbers + appID + method.utf8.count
            default: return numbers + appID
            }
        case .freezeStarted(_, _, .failed(let reason)), .freezeChecked(_, .failed(let reason)):
            return numbers + appID + reason.utf8.count
        default:
            return numbers + appID
        }
    }

    /// Writes `input`, whose ``tag(_:)`` is not 0, after its tag.
    static func write(_ input: CoreInput, to w: inout Writer) {
        switch input {
        case .lifecycle(let input, let request, let from):
            let known = from.map { w.context.knownOrigin($0) } ?? nil
            w.byte((request == nil ? 0 : 1) | (from == nil ? 0 : 2) | (known == nil ? 0 : 4))
            if let request { w.request(request) }
            if let known {
                w.byte(known)
            } else if let from {
                w.unsigned(from.connection.rawValue)
                w.unsigned(UInt64(from.caller.uid))
                w.signed(Int64(from.caller.pid))
                w.context.remember(from)
            }
            switch input {
            case .assertionRequested(let app, let connection, let name):
                w.app(app)
                w.connection(connection, callerOn: from)
                w.name(name)
            case .assertionEndRequested(let app, let task):
                w.app(app)
                w.unsigned(task.rawValue)
            case .foregroundRequested(let app, let exclusive):
                w.app(app)
                w.bool(exclusive)
            case .backgroundRequested(let app), .freezeConfirmed(let app), .terminateRequested(let app):
                w.app(app)
            case .launchRequested(let app, let background, let exclusive):
                w.app(app)
                w.byte((background ? 1 : 0) | (exclusive ? 2 : 0))
            case .appLaunched(let app, let pid):
                w.app(app)
                w.signed(Int64(pid))
            case .appCheckedIn(let app, let connection, let pid, let inAdoptedCgroup):
                w.app(app)
                w.connection(connection, callerOn: from)
                w.optionalPID(pid)
                w.bool(inAdoptedCgroup)
            case .connectionClosed(let connection):
                w.unsigned(connection.rawValue)
            case .processExited(let app, let pid):
                w.app(app)
                w.optionalPID(pid)
            case .deadlineReached:
                break
            case .eventAcknowledged(let event, let caller):
                w.unsigned(event.rawValue)
                w.caller(caller)
            case .locksObserved(let app, let observation):
                w.app(app)
                w.signed(Int64(observation.held))
            case .appCallReceived(let app, let method, let caller):
                w.app(app)
                w.string(method)
                w.caller(caller)
            default:
                preconditionFailure("an input without a packed form was packed")
            }
        case .deadlineReached, .wallDeadlineReached:
            break
        case .freezeStarted(let app, let partsAwaited, let own):
            w.app(app)
            w.signed(Int64(partsAwaited))
            w.freezeFact(own)
        case .freezeChecked(let app, let fact):
            w.app(app)
            w.freezeFact(fact)
        case .freezePartDone(let app):
            w.app(app)
        default:
            preconditionFailure("an input without a packed form was packed")
        }
    }

    static func read(tag: UInt8, from r: inout Reader) throws -> CoreInput {
        switch tag {
        case 32: return .deadlineReached
        case 33: return .wallDeadlineReached
        case 34: return .freezeStarted(try r.app(), partsAwaited: try r.int(), own: try r.freezeFact())
        case 35: return .freezeChecked(try r.app(), try r.freezeFact())
        case 36: return .freezePartDone(try r.app())
        case 1...15: break
        default: throw InputRecorder.PackedError.badTag(tag)
        }
        let flags = try r.byte()
        guard flags & ~7 == 0, flags & 6 != 4 else { throw InputRecorder.PackedError.badValue }
        let request = flags & 1 != 0 ? try r.request() : nil
        var from: CallOrigin?
        if flags & 4 != 0 {
            from = try r.context.origin(at: try r.byte())
        } else if flags & 2 != 0 {
            let connection = ConnectionID(try r.unsigned())
            let uid = try r.uint32()
            from = CallOrigin(connection: connection, caller: DenialBudget.Caller(uid: uid, pid: try r.int32()))
            r.context.remember(from!)
        }
        let input: Input
        switch tag {
        case 1:
            input = .assertionRequested(try r.app(), connection: try r.connection(callerOn: from), name: try r.name())
        case 2: input = .assertionEndRequested(try r.app(), TaskID(try r.unsigned()))
        case 3: input = .foregroundRequested(try r.app(), exclusive: try r.bool())
        case 4: input = .backgroundRequested(try r.app())
        case 5:
            let app = try r.app()
            let flags = try r.byte()
            input = .launchRequested(app, background: flags & 1 != 0, exclusive: flags & 2 != 0)
        case 6: input = .appLaunched(try r.app(), pid: try r.int32())
        case 7:
            input = .appCheckedIn(try r.app(), connection: try r.connection(callerOn: from), pid: try r.optionalPID(),
                                  inAdoptedCgroup: try r.bool())
        case 8: input = .connectionClosed(ConnectionID(try r.unsigned()))
        case 9: input = .processExited(try r.app(), pid: try r.optionalPID())
        case 10: input = .freezeConfirmed(try r.app())
        case 11: input = .deadlineReached
        case 12: input = .eventAcknowledged(EventID(try r.unsigned()), caller: try r.caller())
        case 13: input = .locksObserved(try r.app(), LockObservation(held: try r.int()))
        case 14: input = .appCallReceived(try r.app(), method: try r.string(), caller: try r.caller())
        default: input = .terminateRequested(try r.app())
        }
        return .lifecycle(input, request: request, from: from)
    }
}

/// What a block's packed entries named before, so that naming it again takes fewer bytes; the writer and
/// the reader keep the same one, entry by entry.
struct PackContext {
    /// The app named last: named again, it is a 0 (no app ID is empty).
    var app: AppID?
    /// The task name written last: written again, it is a 2.
    var name: String?
    /// The request written last: the next is written as the difference.
    var request: UInt64 = 0
    /// Call origins by their connection's low four bits: a call from a remembered origin is its slot's number.
    private var origins: [CallOrigin?] = []

    init(app: AppID? = nil) { self.app = app }

    /// The slot remembering `origin`, if one does.
    func knownOrigin(_ origin: CallOrigin) -> UInt8? {
        let slot = Int(truncatingIfNeeded: origin.connection.rawValue & 15)
        return slot < origins.count && origins[slot] == origin ? UInt8(slot) : nil
    }

    /// The origin slot `slot` remembers.
    func origin(at slot: UInt8) throws -> CallOrigin {
        guard Int(slot) < origins.count, let origin = origins[Int(slot)] else { throw InputRecorder.PackedError.badValue }
        return origin
    }

    mutating func remember(_ origin: CallOrigin) {
        if origins.isEmpty { origins = Array(repeating: nil, count: 16) }
        origins[Int(truncatingIfNeeded: origin.connection.rawValue & 15)] = origin
    }
}

/// Appends to a block's bytes.
struct Writer {
    var bytes: [UInt8]
    var context = PackContext()

    init(bytes: [UInt8], context: PackContext = PackContext()) {
        self.bytes = bytes
        self.context = context
    }

    mutating func byte(_ b: UInt8) { bytes.append(b) }
    mutating func bool(_ b: Bool) { bytes.append(b ? 1 : 0) }

    /// LEB128.
    mutating func unsigned(_ v: UInt64) { bytes.appendVarint(v) }

    /// Zig-zag, then LEB128.
    mutating func signed(_ v: Int64) { unsigned(UInt64(bitPattern: (v << 1) ^ (v >> 63))) }

    /// Eight bytes, little-endian (a value spread over all its bits, such as a hash).
    mutating func fixed(_ v: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: v >> UInt64(shift))) }
    }

    mutating func string(_ s: String) {
        var s = s
        s.withUTF8 { utf8 in
            unsigned(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    mutating func app(_ app: AppID) {
        if app == context.app { return byte(0) }
        string(app.rawValue)
        context.app = app
    }

    /// A task name: 0 none, 2 the name written last, 1 and the name.
    mutating func name(_ name: String?) {
        guard let name else { return byte(0) }
        if name == context.name { return byte(2) }
        byte(1)
        string(name)
        context.name = name
    }

    /// The request, as the difference from the one written last.
    mutating func request(_ request: RequestID) {
        signed(Int64(bitPattern: request.rawValue &- context.request))
        context.request = request.rawValue
    }

    /// A connection: 0 when it is the caller's own, else its number plus one.
    mutating func connection(_ connection: ConnectionID, callerOn from: CallOrigin?) {
        unsigned(connection == from?.connection ? 0 : connection.rawValue &+ 1)
    }

    mutating func optionalPID(_ pid: Int32?) {
        if let pid {
            byte(1)
            signed(Int64(pid))
        } else {
            byte(0)
        }
    }

    mutating func caller(_ c: Caller) {
        signed(Int64(c.pid))
        unsigned(UInt64(c.uid))
        unsigned(UInt64(c.gid))
    }

    mutating func freezeFact(_ f: FreezeFact) {
        switch f {
        case .frozen: byte(0)
        case .notYet: byte(1)
        case .failed(let reason):
            byte(2)
            string(reason)
        }
    }
}

/// Reads a block's bytes back.
struct Reader {
    let bytes: [UInt8]
    /// What the entries read named (``PackContext``).
    var context = PackContext()
    var index = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { index >= bytes.count }

    mutating func byte() throws -> UInt8 {
        guard index < bytes.count else { throw InputRecorder.PackedError.truncated }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func bool() throws -> Bool {
        switch try byte() {
        case 0: return false
        case 1: return true
        default: throw InputRecorder.PackedError.badValue
        }
    }

    mutating func unsigned() throws -> UInt64 {
        var v: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let b = try byte()
            guard shift < 64 else { throw InputRecorder.PackedError.badValue }
            v |= UInt64(b & 0x7F) << shift
            if b < 0x80 { return v }
            shift += 7
        }
    }

    mutating func signed() throws -> Int64 {
        let u = try unsigned()
        return Int64(bitPattern: (u >> 1) ^ (0 &- (u & 1)))
    }

    mutating func fixed() throws -> UInt64 {
        var v: UInt64 = 0
        for shift in stride(from: 0, to: 64, by: 8) { v |= UInt64(try byte()) << UInt64(shift) }
        return v
    }

    mutating func int() throws -> Int {
        guard let v = Int(exactly: try signed()) else { throw InputRecorder.PackedError.badValue }
        return v
    }

    mutating func int32() throws -> Int32 {
        guard let v = Int32(exactly: try signed()) else { throw InputRecorder.PackedError.badValue }
        return v
    }

    mutating func uint32() throws -> UInt32 {
        guard let v = UInt32(exactly: try unsigned()) else { throw InputRecorder.PackedError.badValue }
        return v
    }

    mutating func string() throws -> String {
        let n = Int(try unsigned())
        guard n <= bytes.count - index else { throw InputRecorder.PackedError.truncated }
        defer { index += n }
        return String(decoding: bytes[index..<index + n], as: UTF8.self)
    }

    mutating func app() throws -> AppID {
        let text = try string()
        if text.isEmpty {
            guard let app = context.app else { throw InputRecorder.PackedError.badValue }
            return app
        }
        guard let app = AppID(text) else { throw InputRecorder.PackedError.badValue }
        context.app = app
        return app
    }

    mutating func name() throws -> String? {
        switch try byte() {
        case 0: return nil
        case 1:
            let name = try string()
            context.name = name
            return name
        case 2:
            guard let name = context.name else { throw InputRecorder.PackedError.badValue }
            return name
        default: throw InputRecorder.PackedError.badValue
        }
    }

    mutating func request() throws -> RequestID {
        context.request &+= UInt64(bitPattern: try signed())
        return RequestID(context.request)
    }

    mutating func connection(callerOn from: CallOrigin?) throws -> ConnectionID {
        let n = try unsigned()
        if n == 0 {
            guard let from else { throw InputRecorder.PackedError.badValue }
            return from.connection
        }
        return ConnectionID(n &- 1)
    }

    mutating func optionalPID() throws -> Int32? { try bool() ? try int32() : nil }

    mutating func caller() throws -> Caller {
        let pid = try int32()
        let uid = try uint32()
        return Caller(pid: pid, uid: uid, gid: try uint32())
    }

    mutating func freezeFact() throws -> FreezeFact {
        switch try byte() {
        case 0: return .frozen
        case 1: return .notYet
        case 2: return .failed(try string())
        default: throw InputRecorder.PackedError.badValue
        }
    }
}
