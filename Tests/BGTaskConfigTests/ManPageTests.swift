import BGTaskConfig
import Foundation
import Testing

/// The manual pages cannot drift from the code: every key the parsers know is documented, under its
/// section, and no key is documented that the parsers do not know. (bgtaskctl's verbs and options are
/// checked against the built binary by IntegrationTests/check-docs.sh.)
@Suite("man pages")
struct ManPageTests {
    private func page(_ name: String) throws -> String {
        try String(contentsOfFile: repositoryRoot() + "/man/" + name, encoding: .utf8)
    }

    /// `*Key=*` terms of a scdoc page, by the `# [Section] SECTION` heading they stand under.
    private func documentedKeys(_ text: String) -> [String: [String]] {
        var section = ""
        var keys: [String: [String]] = [:]
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("# ["), let close = line.firstIndex(of: "]") {
                section = String(line[line.index(line.startIndex, offsetBy: 3)..<close])
            } else if line.hasPrefix("# ") {
                section = ""
            } else if line.hasPrefix("*"), line.hasSuffix("=*"), !section.isEmpty {
                keys[section, default: []].append(String(line.dropFirst().dropLast(2)))
            }
        }
        return keys
    }

    @Test func confPageDocumentsEveryDaemonKey() throws {
        let documented = documentedKeys(try page("bgtaskd.conf.5.scd"))
        var known: [String: [String]] = [:]
        for key in DaemonConfig.keys { known[key.section, default: []].append(key.key) }
        for (section, keys) in known {
            let missing = keys.filter { !(documented[section] ?? []).contains($0) }
            #expect(missing == [], "bgtaskd.conf.5.scd lacks [\(section)] \(missing)")
        }
        for (section, keys) in documented {
            let unknown = keys.filter { !(known[section] ?? []).contains($0) }
            #expect(unknown == [], "bgtaskd.conf.5.scd documents unknown [\(section)] \(unknown)")
        }
    }

    @Test func appPageDocumentsEveryManifestKey() throws {
        let documented = documentedKeys(try page("bgtaskd.app.5.scd"))["App"] ?? []
        #expect(Set(documented) == Set(AppManifestFile.keys),
                "bgtaskd.app.5.scd: missing \(Set(AppManifestFile.keys).subtracting(documented).sorted()), unknown \(Set(documented).subtracting(AppManifestFile.keys).sorted())")
    }

    @Test func appPageDocumentsEveryDesktopEntryKey() throws {
        let text = try page("bgtaskd.app.5.scd")
        let keys = [DesktopEntries.Keys.lifecycleAware, DesktopEntries.Keys.backgroundModes,
                    DesktopEntries.Keys.permittedTaskIdentifiers, DesktopEntries.Keys.exempt]
        for key in keys {
            #expect(text.contains("\n*\(key)=*\n"), "bgtaskd.app.5.scd lacks the desktop-entry key \(key)")
        }
    }

    @Test func everyPageNamesItselfAndItsSection() throws {
        for (name, section) in [("bgtaskctl", 1), ("bgtaskd", 8), ("bgtaskd.conf", 5), ("bgtaskd.app", 5)] {
            let text = try page("\(name).\(section).scd")
            #expect(text.hasPrefix("\(name)(\(section))\n"), "\(name).\(section).scd must start with its title")
            #expect(text.contains("# NAME\n\n\(name)"), "\(name).\(section).scd: NAME section")
        }
    }
}
