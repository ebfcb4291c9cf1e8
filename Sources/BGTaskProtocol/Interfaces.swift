/// The Varlink interface descriptions bgtaskd serves (SPEC §10), as `GetInterfaceDescription` returns them. The
/// texts, names and signature tables are generated from varlink/*.varlink (Generated/Interfaces+*.generated.swift).
public enum Interfaces: Sendable {
    /// Method names declared in an interface description (`method Name(`).
    public static func methodNames(in description: String) -> Set<String> {
        var names = Set<String>()
        for line in description.split(separator: "\n") {
            let t = line.drop(while: { $0 == " " })
            guard t.hasPrefix("method ") else { continue }
            let rest = t.dropFirst("method ".count)
            let name = rest.prefix(while: { $0.isLetter || $0.isNumber })
            if !name.isEmpty { names.insert(String(name)) }
        }
        return names
    }

    /// The interface name declared in a description (`interface a.b.c`).
    public static func interfaceName(in description: String) -> String? {
        for line in description.split(separator: "\n") {
            let t = line.drop(while: { $0 == " " })
            if t.hasPrefix("interface ") { return String(t.dropFirst("interface ".count)).trimmingSpaces() }
        }
        return nil
    }
}

extension String {
    func trimmingSpaces() -> String {
        String(self.drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }
}
