"""The Swift of a struct (fields, init, init(json:), json, write(into:)) and of an interface's method and
error enums."""
from .field import doc_lines, swift_string
from .idl import IDLError


# ---- Swift code ---------------------------------------------------------------------------------------

def gen_struct(name, doc, fields, ns, indent="    "):
    p, q = indent, indent + "    "
    out = doc_lines(doc, p)
    out.append(p + "public struct %s: WireMessage {" % name)
    out.append(q + "public static let fields = [%s]" % ", ".join(swift_string(f.name) for f in fields))
    for f in fields:
        out += doc_lines(f.doc, q)
        out.append(q + "public var %s: %s" % (f.ident, f.stored))
    out.append("")
    params = ", ".join("%s: %s" % (f.ident, f.parameter) for f in fields)
    out.append(q + "public init(%s) {" % params)
    out += [q + "    " + f.assign_from_init() for f in fields]
    out.append(q + "}")
    out.append("")
    out.append(q + "public init(json: [String: JSON]) throws(WireFieldError) {")
    out.append(q + "    let r = WireReader(json)")
    out += [q + "    %s = %s" % (f.ident, f.reader()) for f in fields]
    out.append(q + "    try validate()")
    out.append(q + "}")
    out.append("")
    # The JSON object (the checks and the tests read it).
    fixed = [f for f in fields if f.always_written]
    cond = [f for f in fields if not f.always_written]

    def fixed_value(f):
        if f.optional:  # sent as null when absent
            return "%s.map { %s } ?? .null" % (f.ident, f.json_value("$0"))
        return f.json_value(f.ident)

    out.append(q + "public var json: [String: JSON] {")
    literal = "[%s]" % ", ".join('"%s": %s' % (f.name, fixed_value(f)) for f in fixed) if fixed else "[:]"
    if not cond:
        out.append(q + "    " + literal)
    else:
        out.append(q + "    var o: [String: JSON] = " + literal)
        for f in cond:
            value = f.ident if f.kind == "object" else "%s.map { %s }" % (f.ident, f.json_value("$0"))
            out.append(q + '    o.put("%s", %s)' % (f.name, value))
        out.append(q + "    return o")
    out.append(q + "}")
    out.append("")
    # The bytes of JSON.write(.object(json)) (keys sorted), from preformatted parts.
    out.append(q + "public func write(into out: inout [UInt8]) {")
    b = q + "    "
    ordered = sorted(fields, key=lambda f: f.name.encode())
    first_fixed = next((i for i, f in enumerate(ordered) if f.always_written), None)
    # The brace joins the first key when that key is always written (one append fewer).
    brace = "{" if first_fixed == 0 else ""
    if not brace:
        out.append(b + 'out.append(UInt8(ascii: "{"))')
    runtime_sep = first_fixed is None and len(ordered) > 1
    if runtime_sep:
        out.append(b + "var first = true")
    for i, f in enumerate(ordered):
        if runtime_sep:
            lead, trail = None, None
        elif first_fixed is None or i < first_fixed:
            lead, trail = "", ","
        elif i == first_fixed:
            lead, trail = "", ""
        else:
            lead, trail = ",", ""
        key = '"%s":' % f.name
        if f.always_written:
            out.append(b + "out.appendLiteral(#\"%s%s%s\"#)" % (brace if i == 0 else "", lead, key))
            if f.optional:
                out.append(b + "if let v = %s {" % f.ident)
                out += f.write_value("v", b + "    ")
                out.append(b + "} else {")
                out.append(b + '    out.appendLiteral("null")')
                out.append(b + "}")
            else:
                out += f.write_value(f.ident, b)
            continue
        out.append(b + "if let v = %s {" % f.ident)
        if runtime_sep:
            if i > 0:
                out.append(b + '    if !first { out.append(UInt8(ascii: ",")) }')
            if i < len(ordered) - 1:
                out.append(b + "    first = false")
            out.append(b + "    out.appendLiteral(#\"%s\"#)" % key)
            out += f.write_value("v", b + "    ")
        else:
            out.append(b + "    out.appendLiteral(#\"%s%s\"#)" % (lead, key))
            out += f.write_value("v", b + "    ")
            if trail:
                out.append(b + '    out.append(UInt8(ascii: "%s"))' % trail)
        out.append(b + "}")
    out.append(b + 'out.append(UInt8(ascii: "}"))')
    out.append(q + "}")
    out.append(p + "}")
    return out


def lower_first(s):
    return s[0].lower() + s[1:]


def error_swift_type(field):
    t = field.type
    opt = isinstance(t, tuple) and t[0] == "opt"
    base = t[1] if opt else t
    swift = {"string": "String", "int": "Int64", "bool": "Bool"}.get(base)
    if swift is None:
        raise IDLError("error parameter %s: only string, int and bool are supported" % field.name)
    return swift, opt, base


def gen_methods_and_errors(iface, m):
    ns, name_const = m.namespace, "Interfaces.%sName" % m.interface
    out = ["/// The methods of `%s` (raw value: the Varlink method name)." % iface.name,
           "public enum %s: String, CaseIterable, Sendable, WireMethod {" % m.methods]
    for meth, _, _, _ in iface.methods:
        out.append('    case %s = "%s"' % (lower_first(meth), meth))
    out += ["", "    public static let interface = %s" % name_const,
            '    public var qualifiedName: String { Self.interface + "." + rawValue }', "",
            "    /// The method a call names, nil for another interface or an unknown method.",
            "    public init?(_ call: VarlinkCall) {"]
    if m.fast:
        out += ["        // Decoded by the fast path: the method is known without comparing strings.",
                "        if let known = call.%s {" % lower_first(m.methods), "            self = known", "            return", "        }"]
    out += ["        guard call.interface == Self.interface[...] else { return nil }",
            "        self.init(rawValue: String(call.methodName))", "    }", ""]
    for prop, idx, suffix in (("parametersType", 1, ""), ("replyType", 2, "Reply")):
        out += ["    public var %s: any WireMessage.Type {" % prop, "        switch self {"]
        empty = []
        for meth in iface.methods:
            if not meth[idx]:
                empty.append("." + lower_first(meth[0]))
                continue
            sname = m.struct_names.get(meth[0], meth[0]) if idx == 1 else meth[0] + suffix
            out.append("        case .%s: return %s.%s.self" % (lower_first(meth[0]), ns, sname))
        if empty:
            out.append("        case %s: return WireEmpty.self" % ", ".join(empty))
        out += ["        }", "    }", ""]
    out[-1:] = ["}", ""]
    out += ["/// Parameter, reply and type structs of `%s`." % iface.name, "public enum %s: Sendable {}" % ns, ""]
    # Errors.
    E = m.errors
    out += ["/// The errors of `%s` (`error` declarations), each with its parameters." % iface.name,
            "public enum %s: Error, Sendable, Equatable {" % E]
    for en, fields, doc in iface.errors:
        out += doc_lines(doc, "    ")
        if fields:
            args = ", ".join("%s: %s%s" % (f.name, error_swift_type(f)[0], "?" if error_swift_type(f)[1] else "")
                             for f in fields)
            out.append("    case %s(%s)" % (lower_first(en), args))
        else:
            out.append("    case %s" % lower_first(en))
    out += ["", "    /// Error names (without the interface) → their parameters, in declaration order.",
            "    public static let declared: [String: [String]] = ["]
    out += ['        "%s": [%s],' % (en, ", ".join(swift_string(f.name) for f in fields)) for en, fields, _ in iface.errors]
    out += ["    ]", "", "    /// The error's name without the interface.", "    public var shortName: String {",
            "        switch self {"]
    out += ['        case .%s: return "%s"' % (lower_first(en), en) for en, _, _ in iface.errors]
    out += ["        }", "    }", "", "    public var parameters: [String: JSON] {", "        switch self {"]
    for en, fields, _ in iface.errors:
        if not fields:
            out.append("        case .%s: return [:]" % lower_first(en))
            continue
        binds = ", ".join("let %s" % f.name for f in fields)
        req = [f for f in fields if not error_swift_type(f)[1]]
        opt = [f for f in fields if error_swift_type(f)[1]]
        conv = {"string": ".string(%s)", "int": ".int(%s)", "bool": ".bool(%s)"}
        lit = "[%s]" % ", ".join('"%s": %s' % (f.name, conv[error_swift_type(f)[2]] % f.name) for f in req) if req else "[:]"
        if not opt:
            out.append("        case .%s(%s): return %s" % (lower_first(en), binds, lit))
        else:
            out.append("        case .%s(%s):" % (lower_first(en), binds))
            out.append("            var o: [String: JSON] = %s" % lit)
            for f in opt:
                out.append('            o.put("%s", %s.map { %s })' % (f.name, f.name, conv[error_swift_type(f)[2]] % "$0"))
            out.append("            return o")
    out += ["        }", "    }", "", "    /// The error as sent: `%s.<Name>` with its parameters." % iface.name,
            '    public var varlinkError: VarlinkError { VarlinkError(%s + "." + shortName, parameters) }' % name_const, "",
            "    /// The error a reply names; nil for another interface's or an unknown one (a newer daemon's).",
            "    public init?(_ error: VarlinkError) {",
            '        let prefix = %s + "."' % name_const,
            "        guard error.name.hasPrefix(prefix) else { return nil }"]
    if any(f for _, fields, _ in iface.errors for f in fields):
        out.append("        let r = WireReader(error.parameters)")
    out.append("        switch String(error.name.dropFirst(prefix.count)) {")
    for en, fields, _ in iface.errors:
        if not fields:
            out.append('        case "%s": self = .%s' % (en, lower_first(en)))
            continue
        args = []
        for f in fields:
            swift, opt, base = error_swift_type(f)
            call = {"string": "String", "int": "Int", "bool": "Bool"}[base]
            zero = {"string": '""', "int": "0", "bool": "false"}[base]
            if opt:
                args.append('%s: (try? r.optional%s("%s")) ?? nil' % (f.name, call, f.name))
            else:
                args.append('%s: (try? r.%s("%s")) ?? %s' % (f.name, call.lower(), f.name, zero))
        out.append('        case "%s": self = .%s(%s)' % (en, lower_first(en), ", ".join(args)))
    out += ["        default: return nil", "        }", "    }", "}"]
    return out
