import BGTaskVarlink
import BGTaskProtocol
import BGTaskVarlink

#if canImport(Glibc)
import Glibc
#endif

/// `org.varlink.certification` as the reference server in the Python `varlink` package serves it
/// (`varlink/tests/test_certification.py`): each client id must call Start, Test01 … Test11, End in
/// order, passing back exactly what the previous call returned; any deviation is a
/// `CertificationError(wants, got)` and (for a wrong value) forgets the client id.
///
/// Runs on the server's queue only.
final class CertificationService: VarlinkService, @unchecked Sendable {
    // @unchecked: state is touched only on the server's queue.

    /// Client id → the method it must call next, and when it was issued.
    private var clients: [String: (next: String, issuedUSec: UInt64)] = [:]
    /// Issue order, to expire old ids like the reference server (after 12 hours).
    private var lifetimes: [(issuedUSec: UInt64, clientID: String)] = []
    private var lifetimesHead = 0
    private static let lifetimeUSec: UInt64 = 12 * 60 * 60 * 1_000_000

    var interfaceDescriptions: [(name: String, description: String)] {
        [(Certification.interfaceName, Certification.description)]
    }

    func connectionClosed(_ connection: VarlinkConnection) {}

    func handle(_ request: VarlinkRequest) {
        let call = request.call
        let method = String(call.methodName)
        guard let inputs = Certification.inputs[method] else {
            request.fail(.methodNotImplemented(call.method))
            return
        }
        // The reference server's generic layer: unknown names, missing or mistyped scalars.
        for name in call.parameters.keys.sorted() where !inputs.contains(where: { $0.name == name }) {
            request.fail(.invalidParameter(name))
            return
        }
        for (name, kind) in inputs where !Self.accepts(call.parameters[name], as: kind) {
            request.fail(.invalidParameter(name))
            return
        }
        do {
            try serve(method, request)
        } catch {
            request.fail(error)
        }
    }

    private static func accepts(_ value: JSON?, as kind: Certification.Kind) -> Bool {
        switch (kind, value) {
        case (.string, .string?), (.bool, .bool?): return true
        case (.int, .int?), (.int, .double?), (.float, .int?), (.float, .double?): return true
        case (.object, .object?), (.object, .null?), (.object, nil): return true
        case (.array, .array?), (.array, .null?), (.array, nil): return true
        default: return false
        }
    }

    private func serve(_ method: String, _ request: VarlinkRequest) throws(VarlinkError) {
        let call = request.call
        let got = Self.message(of: call)
        if method == "Start" {
            let clientID = newClientID()
            try advance(clientID, from: "Start", got: got)
            try expect(clientID, got, equals: ["method": "org.varlink.certification.Start"])
            request.reply(["client_id": .string(clientID)])
            return
        }
        // Test10 streams; without `more` a client cannot take its replies.
        if method == "Test10", !call.more {
            throw .expectedMore
        }
        let clientID = call.parameters["client_id"]?.stringValue ?? ""
        try advance(clientID, from: method, got: got)
        let id = JSON.string(clientID)
        func wants(_ parameters: [String: JSON], more: Bool = false, oneway: Bool = false) -> JSON {
            var p = parameters
            p["client_id"] = id
            var m: [String: JSON] = ["method": .string(call.method), "parameters": .object(p)]
            if more { m["more"] = true }
            if oneway { m["oneway"] = true }
            return .object(m)
        }
        switch method {
        case "Test01":
            try expect(clientID, got, equals: wants([:]))
            request.reply(["bool": true])
        case "Test02":
            try expect(clientID, got, equals: wants(["bool": true]))
            request.reply(["int": 1])
        case "Test03":
            try expect(clientID, got, equals: wants(["int": 1]))
            request.reply(["float": .double(1.0)])
        case "Test04":
            try expect(clientID, got, equals: wants(["float": .double(1.0)]))
            request.reply(["string": "ping"])
        case "Test05":
            try expect(clientID, got, equals: wants(["string": "ping"]))
            request.reply(Certification.scalars)
        case "Test06":
            try expect(clientID, got, equals: wants(Certification.scalars))
            request.reply(["struct": .object(Certification.scalars)])
        case "Test07":
            try expect(clientID, got, equals: wants(["struct": .object(Certification.scalars)]))
            request.reply(["map": Certification.map])
        case "Test08":
            try expect(clientID, got, equals: wants(["map": Certification.map]))
            request.reply(["set": Certification.set])
        case "Test09":
            try expect(clientID, got, equals: wants(["set": Certification.set]))
            // The reference server echoes client_id beside mytype.
            request.reply(["client_id": id, "mytype": Certification.myType])
        case "Test10":
            let w = wants(["mytype": Certification.myTypeWanted], more: true)
            let mytype = Self.normalizedMyType(call.parameters["mytype"])
            try check(clientID, w, got, mytype != nil && Self.equal(mytype ?? .null, Certification.myTypeWanted))
            let replies = Certification.streamedReplies
            for (i, text) in replies.enumerated() {
                request.reply(["string": .string(text)], continues: i < replies.count - 1)
            }
        case "Test11":
            let w = wants(["last_more_replies": .array(Certification.streamedReplies.map { .string($0) })], oneway: true)
            try check(clientID, w, got, call.oneway)
            let last = call.parameters["last_more_replies"]?.arrayValue ?? []
            let ok = last.count >= 10 && (0..<10).allSatisfy { last[$0] == .string(Certification.streamedReplies[$0]) }
            try check(clientID, w, got, ok)
            // Oneway: the layer sends nothing back.
            request.reply()
        case "End":
            try expect(clientID, got, equals: wants([:]))
            forget(clientID)
            request.reply(["all_ok": true])
        default:
            throw .methodNotImplemented(call.method)
        }
    }

    // MARK: the reference server's assertions

    /// `assert_method`: the client id must exist and call the method it is due to call.
    private func advance(_ clientID: String, from method: String, got: JSON) throws(VarlinkError) {
        guard let state = clients[clientID] else {
            throw Self.certificationError(
                wants: ["method": "org.varlink.certification.Start+++"],
                got: ["method": .string("org.varlink.certification." + method)])
        }
        expireOldClients()
        guard state.next == method else {
            // Out of order: reported, but the client id stays valid.
            throw Self.certificationError(
                wants: .string("Call to method org.varlink.certification." + state.next),
                got: .string("Call to method org.varlink.certification." + method))
        }
        clients[clientID]?.next = Certification.successor[method] ?? "Start"
    }

    /// `assert_raw`: the whole message must be what the previous reply implies.
    private func expect(_ clientID: String, _ got: JSON, equals wants: JSON) throws(VarlinkError) {
        try check(clientID, wants, got, Self.equal(got, wants))
    }

    /// `assert_cmp`: on failure the client id is forgotten.
    private func check(_ clientID: String, _ wants: JSON, _ got: JSON, _ ok: Bool) throws(VarlinkError) {
        guard ok else {
            forget(clientID)
            throw Self.certificationError(wants: wants, got: got)
        }
    }

    private static func certificationError(wants: JSON, got: JSON) -> VarlinkError {
        VarlinkError("org.varlink.certification.CertificationError", ["wants": wants, "got": got])
    }

    // MARK: client ids

    private func newClientID() -> String {
        var rng = SystemRandomNumberGenerator()
        let hex = Array("0123456789abcdef")
        var id = ""
        for _ in 0..<16 {
            let b = UInt8.random(in: 0...255, using: &rng)
            id.append(hex[Int(b >> 4)])
            id.append(hex[Int(b & 0xF)])
        }
        let now = Self.monotonicUSec()
        clients[id] = ("Start", now)
        lifetimes.append((now, id))
        return id
    }

    private func forget(_ clientID: String) {
        clients[clientID] = nil
    }

    private func expireOldClients() {
        let now = Self.monotonicUSec()
        while lifetimesHead < lifetimes.count, now - lifetimes[lifetimesHead].issuedUSec >= Self.lifetimeUSec {
            let id = lifetimes[lifetimesHead].clientID
            if let c = clients[id], c.issuedUSec == lifetimes[lifetimesHead].issuedUSec { clients[id] = nil }
            lifetimesHead += 1
        }
        if lifetimesHead > 1024, lifetimesHead * 2 > lifetimes.count {
            lifetimes.removeFirst(lifetimesHead)
            lifetimesHead = 0
        }
    }

    private static func monotonicUSec() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000 + UInt64(ts.tv_nsec) / 1000
    }

    // MARK: message comparison

    /// The call as the client sent it (the reference server compares the parsed raw message).
    static func message(of call: VarlinkCall) -> JSON {
        var m: [String: JSON] = ["method": .string(call.method)]
        if !call.parameters.isEmpty { m["parameters"] = .object(call.parameters) }
        if call.more { m["more"] = true }
        if call.oneway { m["oneway"] = true }
        if call.upgrade { m["upgrade"] = true }
        return .object(m)
    }

    /// JSON equality with numbers compared by value (`1 == 1.0`), as Python compares them.
    static func equal(_ a: JSON, _ b: JSON) -> Bool {
        switch (a, b) {
        case (.int(let x), .int(let y)):
            return x == y
        case (.int, .double), (.double, .int), (.double, .double):
            return a.doubleValue == b.doubleValue
        case (.array(let x), .array(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { equal($0, $1) }
        case (.object(let x), .object(let y)):
            return x.count == y.count && x.allSatisfy { k, v in y[k].map { equal(v, $0) } ?? false }
        default:
            return a == b
        }
    }

    /// `mytype` as the reference server's `filter_params` leaves it: undeclared members dropped, null
    /// nullable members removed (a non-null one fails), the string set reduced to its keys.
    static func normalizedMyType(_ value: JSON?) -> JSON? {
        guard case .object(var o)? = value else { return nil }
        let declared: Set = [
            "object", "enum", "struct", "array", "dictionary", "stringset", "nullable", "nullable_array_struct",
            "interface",
        ]
        o = o.filter { declared.contains($0.key) }
        for key in ["nullable", "nullable_array_struct"] {
            guard let v = o[key] else { continue }
            guard v.isNull else { return nil }
            o[key] = nil
        }
        switch o["stringset"] {
        case .object(let s)?: o["stringset"] = .object(s.mapValues { _ in .object([:]) })
        case .array(let a)?:
            var s: [String: JSON] = [:]
            for e in a {
                guard case .string(let k) = e else { return nil }
                s[k] = .object([:])
            }
            o["stringset"] = .object(s)
        default: break
        }
        return .object(o)
    }
}
