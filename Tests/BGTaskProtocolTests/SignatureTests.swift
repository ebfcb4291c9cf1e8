import Testing
@testable import BGTaskProtocol

/// issue 11 point 7: every call is checked against its method's declaration in the published interface
/// descriptions before a handler sees it.
@Suite struct SignatureTests {
    static let descriptions = [Interfaces.service, Interfaces.app, Interfaces.manager]

    static func registry() throws -> VarlinkInterfaceRegistry {
        var r = VarlinkInterfaceRegistry()
        for d in descriptions { try r.register(description: d) }
        return r
    }

    @Test func everyDescriptionParsesWithEveryMethod() throws {
        for d in Self.descriptions {
            let s = try VarlinkInterfaceSignature(parsing: d)
            #expect(s.name == Interfaces.interfaceName(in: d))
            #expect(Set(s.methods.keys) == Interfaces.methodNames(in: d))
        }
        let manager = try VarlinkInterfaceSignature(parsing: Interfaces.manager)
        #expect(manager.methods["PostNotification"] == [
            VarlinkField(name: "name", type: .string), VarlinkField(name: "appId", type: .optional(.string)),
            VarlinkField(name: "payload", type: .optional(.object)),
        ])
        #expect(manager.types["Settings"] != nil)
    }

    @Test func theCertificationShapesParse() throws {
        let s = try VarlinkInterfaceSignature(parsing: """
            # c
            interface org.example.t
            type I (foo: ?[]?[string](foo, bar, baz), anon: (foo: bool, bar: bool))
            method M(set: [string](), i: I, e: (one, two)) -> (x: ?[](first: int, second: string))
            error E (wants: object)
            """)
        #expect(s.methods["M"]?.map(\.name) == ["set", "i", "e"])
        #expect(s.types["I"] == .structure([
            VarlinkField(name: "foo", type: .optional(.array(.optional(.map(.enumeration(["foo", "bar", "baz"])))))),
            VarlinkField(name: "anon", type: .structure([VarlinkField(name: "foo", type: .bool), VarlinkField(name: "bar", type: .bool)])),
        ]))
        #expect(s.invalidParameter(of: "M", in: ["set": ["a": [:]], "i": ["foo": [["x": "bar"]]], "e": "two"]) == nil)
        #expect(s.invalidParameter(of: "M", in: ["i": ["foo": [["x": "qux"]]], "e": "one"]) == "i")
        #expect(s.invalidParameter(of: "M", in: ["e": "three"]) == "e")
        #expect(s.invalidParameter(of: "M", in: ["set": ["a": 1], "e": "one"]) == "set")
    }

    /// The cases the issue found taken silently, and `upgrade`.
    static let reported: [(method: String, parameters: [String: JSON], upgrade: Bool, invalid: String)] = {
        var out: [(String, [String: JSON], Bool, String)] = []
        for v: JSON in [1, true, ["x"], ["k": "v"]] {
            out.append(("io.bgtaskd.App.BeginBackgroundTask", ["appId": "a.b", "name": v], false, "name"))
        }
        for v: JSON in ["true", 1, [], [:]] {
            out.append(("io.bgtaskd.Manager.Launch", ["appId": "a.b", "background": v], false, "background"))
            out.append(("io.bgtaskd.Manager.Foreground", ["appId": "a.b", "exclusive": v], false, "exclusive"))
        }
        for v: JSON in ["{}", 1, true, [1]] {
            out.append(("io.bgtaskd.Manager.PostNotification", ["name": "n", "payload": v], false, "payload"))
        }
        out.append(("io.bgtaskd.Manager.Stats", [:], true, "upgrade"))
        return out
    }()

    @Test(arguments: 0..<17) func reportedCaseIsInvalidParameter(index: Int) throws {
        let c = Self.reported[index]
        let call = VarlinkCall(method: c.method, parameters: c.parameters, upgrade: c.upgrade)
        #expect(try Self.registry().check(call) == .invalidParameter(c.invalid), "\(c.method) \(c.parameters)")
    }

    /// A value of another JSON kind than `type` takes.
    static func wrongValue(for type: VarlinkType) -> JSON {
        switch type {
        case .optional(let t): return wrongValue(for: t)
        case .string, .enumeration: return 7
        case .int, .float: return "7"
        case .bool: return 1
        case .object, .map, .structure, .named: return [1]
        case .array: return ["k": 1]
        }
    }

    static func validValue(for type: VarlinkType) -> JSON {
        switch type {
        case .optional: return .null
        case .string: return "x"
        case .enumeration(let names): return .string(names[0])
        case .int, .float: return 1
        case .bool: return false
        case .object, .map, .structure, .named: return [:]
        case .array: return []
        }
    }

    /// The general rule: every parameter of every method, given a value of the wrong type, is refused
    /// by name; the same call with valid values passes.
    @Test func everyParameterOfEveryMethodIsChecked() throws {
        let registry = try Self.registry()
        var checked = 0
        for (interface, signature) in registry.interfaces {
            for (method, fields) in signature.methods {
                let valid = Dictionary(uniqueKeysWithValues: fields.map { ($0.name, Self.validValue(for: $0.type)) })
                #expect(registry.check(VarlinkCall(method: "\(interface).\(method)", parameters: valid)) == nil)
                for field in fields {
                    var p = valid
                    p[field.name] = Self.wrongValue(for: field.type)
                    let error = registry.check(VarlinkCall(method: "\(interface).\(method)", parameters: p))
                    #expect(error == .invalidParameter(field.name), "\(interface).\(method) \(field.name)")
                    checked += 1
                }
            }
        }
        #expect(checked >= 49)  // every parameter of the 36 methods today
    }

    @Test func missingRequiredScalarsAndUnknownNames() throws {
        let r = try Self.registry()
        #expect(r.check(VarlinkCall(method: "io.bgtaskd.App.EndBackgroundTask", parameters: ["appId": "a"])) == .invalidParameter("taskId"))
        #expect(r.check(VarlinkCall(method: "io.bgtaskd.App.EndBackgroundTask", parameters: ["appId": "a", "taskId": .null])) == .invalidParameter("taskId"))
        #expect(r.check(VarlinkCall(method: "io.bgtaskd.App.EndBackgroundTask", parameters: ["appId": "a", "taskId": 2.0])) == nil)
        #expect(r.check(VarlinkCall(method: "io.bgtaskd.App.EndBackgroundTask", parameters: ["appId": "a", "taskId": 2.5])) == .invalidParameter("taskId"))
        #expect(r.check(VarlinkCall(method: "io.bgtaskd.Nope.X")) == .interfaceNotFound("io.bgtaskd.Nope"))
        #expect(r.check(VarlinkCall(method: "io.bgtaskd.App.Nope")) == .methodNotFound("io.bgtaskd.App.Nope"))
    }

    @Test func decoderTurnsBytesIntoCallsRejectsAndClose() {
        var d = VarlinkInboundDecoder(maxMessageSize: 64)
        d.append(Array(#"{"method":"a.B"}"#.utf8) + [0] + Array(#"{"parameters":{}}"#.utf8) + [0] + Array("[1]".utf8) + [0])
        #expect(d.next() == .call(VarlinkCall(method: "a.B")))
        #expect(d.next() == .reject(.invalidParameter("method")))
        #expect(d.next() == .close)
        #expect(!d.closedForSize)                       // not an object: closed, but not for its size
        var big = VarlinkInboundDecoder(maxMessageSize: 8)
        big.append(Array(repeating: UInt8(ascii: "x"), count: 9))
        #expect(big.next() == .close)
        #expect(big.closedForSize)                      // Stats connectionsOversized counts these
        var terminated = VarlinkInboundDecoder(maxMessageSize: 8)
        terminated.append(Array(#"{"a":"12345"}"#.utf8) + [0])
        #expect(terminated.next() == .close)
        #expect(terminated.closedForSize)
    }
}
