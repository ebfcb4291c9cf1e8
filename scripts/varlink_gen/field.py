"""One field of a struct as Swift stores, reads and writes it (the .swift.map's options applied)."""
from .idl import IDLError

SWIFT_KEYWORDS = {"default", "class", "func", "let", "var", "protocol", "struct", "enum", "case", "in", "is", "as",
                  "init", "self", "Self", "static", "import", "return", "switch", "where", "while", "for", "repeat"}


# ---- Swift types of fields ----------------------------------------------------------------------------

class SwiftField:
    """One field as Swift stores, reads, and writes it."""

    def __init__(self, field, options, ns, key):
        self.name, self.doc, self.key = field.name, field.doc, key
        self.ident = "`%s`" % field.name if field.name in SWIFT_KEYWORDS else field.name
        t = field.type
        self.wire_optional = isinstance(t, tuple) and t[0] == "opt"
        if self.wire_optional:
            t = t[1]
        self.enum = self.wire_enum = self.identifier = None
        self.on_off = self.null = False
        self.default = None
        force_optional = False
        i = 0
        while i < len(options):
            o = options[i]
            if o == "enum":
                self.enum = options[i + 1]
                i += 1
            elif o == "wire-enum":
                self.wire_enum = options[i + 1]
                i += 1
            elif o == "id":
                self.identifier = options[i + 1]
                i += 1
            elif o == "on-off":
                self.on_off = True
            elif o == "null":
                self.null = True
            elif o == "default":
                self.default = options[i + 1]
                i += 1
            elif o == "optional":
                force_optional = True
            else:
                raise IDLError("%s: unknown option %s" % (key, o))
            i += 1
        self.model = bool(self.enum or self.wire_enum or self.identifier)
        self.optional = (self.wire_optional or force_optional) and self.default is None
        self.base = t
        if t == "string":
            self.kind = "enum" if self.enum else "wire-enum" if self.wire_enum else "on-off" if self.on_off else "string"
        elif t == "int" and self.identifier:
            self.kind = "id"
        elif t in ("int", "bool", "object", "float"):
            self.kind = t
            if (self.enum or self.wire_enum or self.on_off) and True:
                raise IDLError("%s: enum options apply to string fields" % key)
        elif t[0] == "named":
            self.kind, self.struct = "struct", "%s.%s" % (ns, t[1])
        elif t[0] == "map" and t[1] == "string":
            self.kind = "string-map"
        elif t[0] == "map" and t[1] == "int":
            self.kind = "int-map"
        elif t[0] == "arr" and t[1] == "string":
            self.kind = "strings"
        elif t[0] == "arr" and isinstance(t[1], tuple) and t[1][0] == "named":
            self.kind, self.struct = "structs", "%s.%s" % (ns, t[1][1])
        else:
            raise IDLError("%s: type %r is not supported by the generator" % (key, t))
        if self.kind == "float":
            raise IDLError("%s: float is not supported by the generator" % key)
        if self.kind in ("strings", "structs") and self.optional:
            raise IDLError("%s: an optional array needs `default []`" % key)
        if self.kind == "object" and not self.optional:
            raise IDLError("%s: a required object is not supported by the generator" % key)

    @property
    def element(self):
        return {"string": "String", "int": "Int64", "bool": "Bool", "object": "JSON", "enum": self.enum,
                "wire-enum": "WireEnum<%s>" % self.wire_enum, "on-off": "Bool", "id": self.identifier, "struct": getattr(self, "struct", ""),
                "strings": "[String]", "structs": "[%s]" % getattr(self, "struct", ""),
                "string-map": "[String: String]", "int-map": "[String: Int64]"}[self.kind]

    @property
    def stored(self):
        return self.element + ("?" if self.optional else "")

    @property
    def parameter(self):
        e = self.wire_enum if self.kind == "wire-enum" else self.element
        if self.optional:
            return e + "? = nil"
        if self.default is not None:
            return "%s = %s" % (e, self.default)
        return e

    def assign_from_init(self):
        if self.kind == "wire-enum":
            v = "%s.map(WireEnum.init)" % self.ident if self.optional else "WireEnum(%s)" % self.ident
            return "self.%s = %s" % (self.ident, v)
        return "self.%s = %s" % (self.ident, self.ident)

    def reader(self):
        k, opt, q = self.kind, self.optional, '"%s"' % self.name
        if k in ("string", "int", "bool"):
            call = {"string": "String", "int": "Int", "bool": "Bool"}[k]
            if opt:
                return "try r.optional%s(%s)" % (call, q)
            if self.default is not None:
                return "try r.optional%s(%s) ?? %s" % (call, q, self.default)
            return "try r.%s(%s)" % (call.lower(), q)
        if k == "object":
            return "try r.optionalObject(%s)" % q
        if k == "id":
            return "try r.%s(%s)" % ("optionalIdentifier" if opt else "identifier", q)
        if k in ("enum", "wire-enum"):
            return "try r.%s(%s)" % ("optionalValue" if opt else "value", q)
        if k == "on-off":
            return "try r.%s(%s)" % ("optionalOnOff" if opt else "onOff", q)
        if k == "struct":
            return "try r.%s(%s)" % ("optionalMessage" if opt else "message", q)
        if k == "strings":
            return "try r.optionalStrings(%s) ?? []" % q
        if k == "string-map":
            return "try r.%s(%s)" % ("optionalStringMap" if opt else "stringMap", q)
        if k == "int-map":
            return "try r.%s(%s)" % ("optionalIntMap" if opt else "intMap", q)
        if k == "structs":
            return "try r.messages(%s)" % q
        raise IDLError(k)

    def json_value(self, v):
        k = self.kind
        return {"string": ".string(%s)", "int": ".int(%s)", "bool": ".bool(%s)", "object": "%s", "id": ".id(%s)",
                "enum": ".raw(%s)", "wire-enum": ".raw(%s)", "on-off": '.string(%s ? "on" : "off")',
                "struct": ".object(%s.json)", "strings": ".array(%s.map { .string($0) })",
                "structs": ".array(%s.map { .object($0.json) })",
                "string-map": ".object(%s.mapValues { .string($0) })",
                "int-map": ".object(%s.mapValues { .int($0) })"}[k] % v

    def write_value(self, v, indent):
        k, p = self.kind, indent
        if k in ("string",):
            return [p + "JSON.writeString(%s, into: &out)" % v]
        if k in ("enum", "wire-enum"):
            return [p + "JSON.writeString(%s.rawValue, into: &out)" % v]
        if k == "on-off":
            return [p + 'out.appendLiteral(%s ? #""on""# : #""off""#)' % v]
        if k == "int":
            return [p + "JSON.writeInt(%s, into: &out)" % v]
        if k == "id":
            return [p + "JSON.writeInt(Int64(clamping: %s.rawValue), into: &out)" % v]
        if k == "bool":
            return [p + 'out.appendLiteral(%s ? "true" : "false")' % v]
        if k in ("object", "struct"):
            return [p + "%s.write(into: &out)" % v]
        if k in ("string-map", "int-map"):
            value = "JSON.writeString(e.value, into: &out)" if k == "string-map" else "JSON.writeInt(e.value, into: &out)"
            return [p + 'out.append(UInt8(ascii: "{"))',
                    p + "for (i, e) in %s.sorted(by: { $0.key < $1.key }).enumerated() {" % v,
                    p + '    if i > 0 { out.append(UInt8(ascii: ",")) }',
                    p + "    JSON.writeString(e.key, into: &out)",
                    p + '    out.append(UInt8(ascii: ":"))',
                    p + "    " + value,
                    p + "}",
                    p + 'out.append(UInt8(ascii: "}"))']
        # By index through the buffer: each element is read in place (a `for e in`, and Array's subscript,
        # copy each, every reference it holds retained and released: 10,009 AppInfos in a ListApps reply).
        elem = "JSON.writeString(elements[i], into: &out)" if k == "strings" else "elements[i].write(into: &out)"
        return [p + 'out.append(UInt8(ascii: "["))',
                p + "%s.withUnsafeBufferPointer { elements in" % v,
                p + "    for i in elements.indices {",
                p + '        if i > 0 { out.append(UInt8(ascii: ",")) }',
                p + "        " + elem,
                p + "    }",
                p + "}",
                p + 'out.append(UInt8(ascii: "]"))']

    @property
    def always_written(self):
        return not self.optional or self.null


def swift_string(s):
    return '"%s"' % s.replace("\\", "\\\\").replace('"', '\\"')


def doc_lines(doc, indent):
    return [indent + "/// " + doc] if doc else []
