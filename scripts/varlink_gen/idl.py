"""The Varlink IDL of varlink/*.varlink and the .swift.map beside each file."""
import re


class IDLError(Exception):
    pass


# ---- The IDL ------------------------------------------------------------------------------------------

class Field:
    def __init__(self, name, type_, doc):
        self.name, self.type, self.doc = name, type_, doc


class Scanner:
    """Tokens of an interface description; `#` comments are kept as the doc of what follows them."""

    def __init__(self, text):
        self.tokens = []  # (kind, value, doc)
        doc = []
        for m in re.finditer(r"#[^\n]*|->|[A-Za-z_][A-Za-z0-9_.]*|[()\[\]?:,]|\n|[ \t\r]+|.", text):
            t = m.group(0)
            if t.startswith("#"):
                doc.append(t[1:].strip())
            elif t == "\n":
                continue
            elif t.strip() == "":
                continue
            elif re.match(r"[()\[\]?:,]|->", t):
                self.tokens.append(("p", t, None))
            elif re.match(r"[A-Za-z_]", t):
                self.tokens.append(("w", t, doc))
                doc = []
            else:
                raise IDLError("unexpected character %r" % t)
        self.i = 0

    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else (None, None, None)

    def next(self):
        t = self.peek()
        self.i += 1
        return t

    def expect(self, value):
        k, v, _ = self.next()
        if v != value:
            raise IDLError("expected %s, found %s" % (value, v))

    def word(self):
        k, v, doc = self.next()
        if k != "w":
            raise IDLError("expected a name, found %s" % v)
        return v, doc

    def struct(self):
        """( name: type, … ) as [Field]; an enum ( a, b ) as ("enum", [names])."""
        self.expect("(")
        fields, names = [], []
        if self.peek()[1] == ")":
            self.next()
            return ("struct", fields)
        while True:
            name, doc = self.word()
            if self.peek()[1] == ":":
                self.next()
                fields.append(Field(name, self.type(), " ".join(doc)))
            else:
                names.append(name)
            k, v, _ = self.next()
            if v == ")":
                break
            if v != ",":
                raise IDLError("expected , or ) after %s" % name)
        return ("enum", names) if names else ("struct", fields)

    def type(self):
        v = self.peek()[1]
        if v == "?":
            self.next()
            return ("opt", self.type())
        if v == "[":
            self.next()
            if self.peek()[1] == "]":
                self.next()
                return ("arr", self.type())
            self.expect("string")
            self.expect("]")
            return ("map", self.type())
        if v == "(":
            return self.struct()
        name, _ = self.word()
        return name if name in ("bool", "int", "float", "string", "object") else ("named", name)


class Interface:
    def __init__(self, name, text):
        self.file_name, self.text = name, text
        s = Scanner(text)
        kw, self.doc = s.word()
        if kw != "interface":
            raise IDLError("%s: no interface declaration first" % name)
        self.name, _ = s.word()
        if self.name != name:
            raise IDLError("%s.varlink declares interface %s" % (name, self.name))
        self.types, self.methods, self.errors = [], [], []
        while s.peek()[0] is not None:
            kw, doc = s.word()
            member, _ = s.word()
            doc = " ".join(doc)
            if kw == "type":
                kind, fields = s.struct()
                if kind != "struct":
                    raise IDLError("type %s: only struct types are supported" % member)
                self.types.append((member, fields, doc))
            elif kw == "method":
                _, inp = s.struct()
                s.expect("->")
                _, out = s.struct()
                self.methods.append((member, inp, out, doc))
            elif kw == "error":
                _, fields = s.struct()
                self.errors.append((member, fields, doc))
            else:
                raise IDLError("unknown keyword %s" % kw)


class SwiftMap:
    def __init__(self, path):
        self.options, self.struct_names, self.fast = {}, {}, []
        self.interface = self.namespace = self.methods = self.errors = None
        for n, line in enumerate(open(path, encoding="utf-8"), 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            words = line.split()
            head = words[0]
            if head in ("interface", "namespace", "methods", "errors"):
                setattr(self, head, words[1])
            elif head == "fast":
                self.fast = words[1:]
            elif head == "struct":
                self.struct_names[words[1]] = words[2]
            elif "." in head or "->" in head:
                self.options[head] = words[1:]
            else:
                raise IDLError("%s:%d: unknown line %r" % (path, n, line))
