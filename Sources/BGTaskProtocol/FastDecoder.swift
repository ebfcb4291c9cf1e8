// The common calls without a JSON tree. `BeginBackgroundTask`, `EndBackgroundTask` and `Acknowledge`
// (the calls an app makes most) and the manager's `Foreground` and `Background` (a tap: the resume path)
// are read field by field straight into the contract's structs; anything the fast path is not sure of —
// an escape in a string, a number that is not a plain integer, an unknown or repeated key, a missing
// field, a value of another type, trailing bytes — makes it give up, and the full decoder (JSON.parse,
// VarlinkCall.decode, the registry's checks) decides as before. So the fast path is exactly as strict as
// the full one: where it answers, the full decoder gives the same call and finds nothing wrong with it
// (FuzzTesting/ checks this on every input, and FastDecoderTests on the cases by hand).

import BGTaskModel

/// Decodes the common calls of `io.bgtaskd.App` and the tap's of `io.bgtaskd.Manager` without building a
/// `JSON` tree.
public enum VarlinkFastDecoder: Sendable {
    /// The parameters of a call the fast path decoded.
    public enum Parameters: Sendable, Equatable {
        case begin(AppWire.BeginBackgroundTask)
        case end(AppWire.EndBackgroundTask)
        case acknowledge(AppWire.Acknowledge)
        case foreground(ManagerWire.Foreground)
        case background(ManagerWire.BackgroundCall)

        /// The `io.bgtaskd.App` method, nil for a manager's.
        public var appMethod: AppMethod? {
            switch self {
            case .begin: return .beginBackgroundTask
            case .end: return .endBackgroundTask
            case .acknowledge: return .acknowledge
            case .foreground, .background: return nil
            }
        }

        /// The `io.bgtaskd.Manager` method, nil for an app's.
        public var managerMethod: ManagerMethod? {
            switch self {
            case .foreground: return .foreground
            case .background: return .background
            case .begin, .end, .acknowledge: return nil
            }
        }

        public var message: any WireMessage {
            switch self {
            case .begin(let p): return p
            case .end(let p): return p
            case .acknowledge(let p): return p
            case .foreground(let p): return p
            case .background(let p): return p
            }
        }
    }

    /// A method's names, made once and shared by every call (no string built per call).
    public final class Names: Sendable {
        public let method: String
        public let interface: Substring
        public let methodName: Substring

        init(_ qualifiedName: String) {
            method = qualifiedName
            let dot = method.lastIndex(of: ".") ?? method.startIndex
            interface = method[..<dot]
            methodName = method[method.index(after: dot)...]
        }
    }

    static let begin = Names(AppMethod.beginBackgroundTask.qualifiedName)
    static let end = Names(AppMethod.endBackgroundTask.qualifiedName)
    static let acknowledge = Names(AppMethod.acknowledge.qualifiedName)
    static let foreground = Names(ManagerMethod.foreground.qualifiedName)
    static let background = Names(ManagerMethod.background.qualifiedName)

    /// The call in `message` (one message without its NUL), or nil when the full decoder must decide.
    public static func decode(_ message: UnsafeBufferPointer<UInt8>) -> VarlinkCall? {
        var s = Scanner(buf: message)
        guard s.take(UInt8(ascii: "{")) else { return nil }
        var method: FastMethod?
        var parsed: Parameters?
        var sawParameters = false
        var more: Bool?
        var oneway: Bool?
        // The parameters come before or after the method: keep their bytes until the method is known.
        var parametersStart = -1
        var parametersEnd = -1
        repeat {
            guard let key = s.key() else { return nil }
            switch key {
            case .method:
                guard method == nil, let m = s.methodName() else { return nil }
                method = m
            case .parameters:
                guard !sawParameters else { return nil }
                sawParameters = true
                if let method {
                    // The method came first (as clients write it): read the parameters in place.
                    guard let p = s.parameters(of: method) else { return nil }
                    parsed = p
                } else {
                    parametersStart = s.i
                    guard s.skipFlatObject() else { return nil }
                    parametersEnd = s.i
                }
            case .more:
                guard more == nil, let b = s.bool() else { return nil }
                more = b
            case .oneway:
                guard oneway == nil, let b = s.bool() else { return nil }
                oneway = b
            default:
                return nil
            }
        } while s.take(UInt8(ascii: ","))
        guard s.take(UInt8(ascii: "}")), s.atEnd(), let method, sawParameters else { return nil }
        if parsed == nil {
            var p = Scanner(buf: UnsafeBufferPointer(rebasing: message[parametersStart..<parametersEnd]))
            guard let later = p.parameters(of: method), p.atEnd() else { return nil }
            parsed = later
        }
        guard let parameters = parsed else { return nil }
        let names: Names
        switch parameters {
        case .begin: names = begin
        case .end: names = end
        case .acknowledge: names = acknowledge
        case .foreground: names = foreground
        case .background: names = background
        }
        return VarlinkCall(fast: parameters, names: names, more: more ?? false, oneway: oneway ?? false)
    }

    public static func decode<C: Collection<UInt8>>(_ message: C) -> VarlinkCall? {
        message.withContiguousStorageIfAvailable { decode($0) } ?? Array(message).withUnsafeBufferPointer { decode($0) }
    }
}

private struct Scanner {
    let buf: UnsafeBufferPointer<UInt8>
    var i = 0

    mutating func space() {
        while i < buf.count {
            switch buf[i] {
            case 0x20, 0x09, 0x0A, 0x0D: i += 1
            default: return
            }
        }
    }

    /// The byte `c` after optional whitespace.
    mutating func take(_ c: UInt8) -> Bool {
        space()
        guard i < buf.count, buf[i] == c else { return false }
        i += 1
        return true
    }

    mutating func atEnd() -> Bool {
        space()
        return i == buf.count
    }

    /// A string without escapes or control characters: its bytes (after the quotes), or nil.
    mutating func plainString() -> UnsafeBufferPointer<UInt8>? {
        guard take(UInt8(ascii: "\"")), let base = buf.baseAddress else { return nil }
        let start = i
        let end = buf.count
        var k = i
        while k < end {
            let c = base[k]
            if c == UInt8(ascii: "\"") {
                i = k + 1
                return UnsafeBufferPointer(start: base + start, count: k - start)
            }
            if c == UInt8(ascii: "\\") || c < 0x20 { return nil }
            k += 1
        }
        return nil
    }

    /// A known key and its colon (the keys are generated from the .varlink files: FastKeys.generated.swift).
    mutating func key() -> FastKey? {
        guard let k = plainString(), take(UInt8(ascii: ":")) else { return nil }
        return FastKey.known(k)
    }

    /// The qualified name of a method the fast path decodes.
    mutating func methodName() -> FastMethod? {
        guard let m = plainString() else { return nil }
        return fastMethod(named: m)
    }

    mutating func literal(_ word: StaticString) -> Bool {
        let n = word.utf8CodeUnitCount
        guard buf.count - i >= n, memcmpEqual(word.utf8Start, buf.baseAddress.map { $0 + i }, n) else { return false }
        i += n
        return true
    }

    mutating func bool() -> Bool? {
        space()
        if literal("true") { return true }
        if literal("false") { return false }
        return nil
    }

    mutating func null() -> Bool {
        space()
        return literal("null")
    }

    /// A plain integer (`-?(0|[1-9][0-9]*)`, at most 18 digits, no fraction or exponent), or nil.
    mutating func integer() -> Int64? {
        space()
        var negative = false
        if i < buf.count, buf[i] == UInt8(ascii: "-") {
            negative = true
            i += 1
        }
        let start = i
        var v: Int64 = 0
        while i < buf.count, buf[i] >= UInt8(ascii: "0"), buf[i] <= UInt8(ascii: "9") {
            // 18 digits always fit an Int64; longer numbers are the full parser's.
            if i - start == 18 { return nil }
            v = v * 10 + Int64(buf[i] - UInt8(ascii: "0"))
            i += 1
        }
        let digits = i - start
        guard digits > 0, !(digits > 1 && buf[start] == UInt8(ascii: "0")) else { return nil }
        if i < buf.count, buf[i] == UInt8(ascii: ".") || buf[i] == UInt8(ascii: "e") || buf[i] == UInt8(ascii: "E") {
            return nil
        }
        if negative && v == 0 { return nil }  // -0: the full parser's business
        return negative ? -v : v
    }

    /// Skips `{ … }` whose values are scalars (strings, numbers, true/false/null), no nesting.
    mutating func skipFlatObject() -> Bool {
        guard take(UInt8(ascii: "{")) else { return false }
        if take(UInt8(ascii: "}")) { return true }
        repeat {
            guard plainString() != nil, take(UInt8(ascii: ":")) else { return false }
            space()
            guard i < buf.count else { return false }
            switch buf[i] {
            case UInt8(ascii: "\""): guard plainString() != nil else { return false }
            case UInt8(ascii: "t"), UInt8(ascii: "f"): guard bool() != nil else { return false }
            case UInt8(ascii: "n"): guard null() else { return false }
            default: guard integer() != nil else { return false }
            }
        } while take(UInt8(ascii: ","))
        return take(UInt8(ascii: "}"))
    }

    static func string(_ b: UnsafeBufferPointer<UInt8>) -> String { String(decoding: b, as: UTF8.self) }

    /// The parameters object of `method` at the scanner's position.
    mutating func parameters(of method: FastMethod) -> VarlinkFastDecoder.Parameters? {
        switch method {
        case .app(.beginBackgroundTask): return beginParameters().map { .begin($0) }
        case .app(.endBackgroundTask): return endParameters().map { .end($0) }
        case .app(.acknowledge): return acknowledgeParameters().map { .acknowledge($0) }
        case .manager(.foreground): return foregroundParameters().map { .foreground($0) }
        case .manager(.background): return backgroundParameters().map { .background($0) }
        default: return nil
        }
    }

    /// `{"appId": string, "name": string|null}` in any order, name optional.
    mutating func beginParameters() -> AppWire.BeginBackgroundTask? {
        guard let (appId, name) = appIdAnd(.name, { $0.plainString().map(Self.string) }) else { return nil }
        return AppWire.BeginBackgroundTask(appId: appId, name: name)
    }

    /// `{"appId": string, second: value|null}` in any order, `second` optional: the app's identifier and
    /// the value `read` reads (nil when absent or null), or nil when anything else is there.
    mutating func appIdAnd<T>(_ second: FastKey, _ read: (inout Scanner) -> T?) -> (String, T?)? {
        guard take(UInt8(ascii: "{")) else { return nil }
        var appId: String?
        var value: T??
        if !take(UInt8(ascii: "}")) {
            repeat {
                switch key() {
                case .appId?:
                    guard appId == nil, let v = plainString() else { return nil }
                    appId = Self.string(v)
                case let k? where k == second:
                    guard value == nil else { return nil }
                    if null() {
                        value = .some(nil)
                    } else {
                        guard let v = read(&self) else { return nil }
                        value = .some(v)
                    }
                default: return nil
                }
            } while take(UInt8(ascii: ","))
            guard take(UInt8(ascii: "}")) else { return nil }
        }
        guard let appId else { return nil }
        return (appId, value ?? nil)
    }

    /// `{"appId": string, "taskId": int ≥ 0}` in any order.
    mutating func endParameters() -> AppWire.EndBackgroundTask? {
        guard take(UInt8(ascii: "{")) else { return nil }
        var appId: String?
        var taskId: Int64?
        repeat {
            switch key() {
            case .appId?:
                guard appId == nil, let v = plainString() else { return nil }
                appId = Self.string(v)
            case .taskId?:
                guard taskId == nil, let v = integer(), v >= 0 else { return nil }
                taskId = v
            default: return nil
            }
        } while take(UInt8(ascii: ","))
        guard take(UInt8(ascii: "}")), let appId, let taskId else { return nil }
        return AppWire.EndBackgroundTask(appId: appId, taskId: TaskID(UInt64(taskId)))
    }

    /// `{"appId": string, "exclusive": bool|null}` in any order, exclusive optional.
    mutating func foregroundParameters() -> ManagerWire.Foreground? {
        guard let (appId, exclusive) = appIdAnd(.exclusive, { $0.bool() }) else { return nil }
        return ManagerWire.Foreground(appId: appId, exclusive: exclusive)
    }

    /// `{"appId": string}`.
    mutating func backgroundParameters() -> ManagerWire.BackgroundCall? {
        guard take(UInt8(ascii: "{")), key() == .appId, let v = plainString(), take(UInt8(ascii: "}")) else {
            return nil
        }
        return ManagerWire.BackgroundCall(appId: Self.string(v))
    }

    /// `{"eventId": int > 0}`.
    mutating func acknowledgeParameters() -> AppWire.Acknowledge? {
        guard take(UInt8(ascii: "{")), key() == .eventId, let v = integer(), v > 0, take(UInt8(ascii: "}")) else {
            return nil
        }
        return AppWire.Acknowledge(eventId: EventID(UInt64(v)))
    }
}

/// Whether `k` spells `lit` (the generated key and method tables compare with it).
@inline(__always)
func fastEqual(_ lit: StaticString, _ k: UnsafeBufferPointer<UInt8>) -> Bool {
    lit.utf8CodeUnitCount == k.count && memcmpEqual(lit.utf8Start, k.baseAddress, k.count)
}

private func memcmpEqual(_ a: UnsafePointer<UInt8>?, _ b: UnsafePointer<UInt8>?, _ n: Int) -> Bool {
    guard let a, let b else { return n == 0 }
    for k in 0..<n where a[k] != b[k] { return false }
    return true
}

extension VarlinkFastDecoder {
    /// Why the fast path and the full decoder disagree on `message`, nil when they agree: where the fast
    /// path answers, the full decoder must give a call of the same method and flags, with the same
    /// parameters read through the same struct, that `registry`'s checks accept. The fuzz target and
    /// FastDecoderTests run this on every input.
    public static func disagreement(on message: UnsafeBufferPointer<UInt8>, registry: VarlinkInterfaceRegistry) -> String? {
        guard let fast = decode(message) else { return nil }
        let full: VarlinkCall
        do {
            full = try VarlinkCall.decode(message)
        } catch {
            return "the fast path decoded a call the full decoder rejects (\(error))"
        }
        if full.method != fast.method || full.more != fast.more || full.oneway != fast.oneway || full.upgrade {
            return "different envelope: fast \(fast.method) more \(fast.more) oneway \(fast.oneway), full \(full)"
        }
        if fast.interface != full.interface || fast.methodName != full.methodName { return "different method split" }
        if let error = registry.check(full) { return "the full checks reject what the fast path accepted: \(error)" }
        if let error = registry.check(fast) { return "the fast call fails the checks: \(error)" }
        guard let parameters = fast.fast else { return "a fast call without typed parameters" }
        func same<T: WireMessage>(_ typed: T) -> String? {
            guard let decoded = try? full.decode(T.self) else { return "the full call's parameters do not decode" }
            guard decoded == typed else { return "different parameters: fast \(typed), full \(decoded)" }
            guard (try? T(json: fast.parameters)) == typed else { return "the fast call's JSON parameters differ" }
            return nil
        }
        switch parameters {
        case .begin(let p): return same(p)
        case .end(let p): return same(p)
        case .acknowledge(let p): return same(p)
        case .foreground(let p): return same(p)
        case .background(let p): return same(p)
        }
    }

    public static func disagreement<C: Collection<UInt8>>(on message: C, registry: VarlinkInterfaceRegistry) -> String? {
        message.withContiguousStorageIfAvailable { disagreement(on: $0, registry: registry) }
            ?? Array(message).withUnsafeBufferPointer { disagreement(on: $0, registry: registry) }
    }
}
