import BGTaskCommandLine
import BGTaskCore
import BGTaskProtocol

#if canImport(Glibc)
import Glibc
#endif

// SPEC §17: record and replay. `record` saves the daemon's recording (GetRecording); `replay` runs it
// through the same core offline, with no daemon and no clock, and compares the decisions.

struct Record: CtlVerb {
    static let verb = VerbLine.Verb(
        "record",
        abstract: "Save every input the daemon's core took, with its times and decisions, to a file (GetRecording; root or ControlGroup=).",
        options: GlobalOptions.options + [Option("output", help: "The file to write (mode 0600: it holds app IDs and payloads).", short: ["o"])])

    var global: GlobalOptions
    var output: String

    init(_ p: VerbLine.Parsed) throws(VerbLine.Stop) {
        global = GlobalOptions(p)
        guard let output = p.options["output"] else { throw .usage("Missing expected argument '--output <output>'") }
        self.output = output
    }

    func run() throws {
        let client = try global.connect()
        var document: [UInt8] = []
        var failure: String?
        try client.stream(ManagerMethod.getRecording.qualifiedName) { reply in
            do {
                document += Array(try ManagerWire.GetRecordingReply(json: reply).part.utf8)
                return true
            } catch {
                failure = "the daemon's reply is not a part of a recording: \(error)"
                return false
            }
        }
        if let failure { throw CtlError(failure) }
        try RecordingFile.write(document, to: output)
        // The daemon states an input whose decisions it cannot (its replay did not match what the live core
        // decided): say so here too, not only in the file.
        if document.firstRange(of: Array(CoreRecording.notKnownPrefix.utf8)) != nil {
            Output.err("bgtaskctl: warning: \(output): the decisions of some inputs are not known (\"\(CoreRecording.notKnownPrefix)\"): the core did not decide the same again; 'bgtaskctl replay' names the first")
        }
    }
}

struct Replay: CtlVerb {
    static let verb = VerbLine.Verb(
        "replay",
        abstract: "Run a recording's inputs through the core offline and compare its decisions: exit 0 when equal, 1 naming the first difference.",
        options: [.flag("quiet", help: "Print only the result, not every input and its decisions.", short: ["q"])],
        arguments: [Argument("file", help: "A file written by 'bgtaskctl record'.")])

    var file: String
    var quiet: Bool

    init(_ p: VerbLine.Parsed) {
        file = p.arguments[0]
        quiet = p.flag("quiet")
    }

    func run() throws {
        let recording = try RecordingFile.read(file)
        let (decisions, difference) = CoreReplay.run(recording)
        if !quiet {
            Output.line(recording.inputsBefore > 0
                ? "checkpoint: the core after the daemon's first \(recording.inputsBefore) inputs"
                : "checkpoint: the core as the daemon started")
            for (i, recorded) in recording.inputs.enumerated() {
                Output.line("[\(i)] \(recorded.monotonicUSec)us \(recorded.input)")
                for d in decisions[i] { Output.line("    \(d)") }
            }
        }
        if let d = difference {
            let expected = d.expected.isEmpty ? ["(none)"] : d.expected
            let got = d.got.isEmpty ? ["(none)"] : d.got
            throw CtlError(
                (["decisions differ at input \(d.index) of \(recording.inputs.count) (\(d.input.monotonicUSec)us): \(d.input.input)",
                  "expected:"] + expected.map { "  " + $0 } + ["got:"] + got.map { "  " + $0 }).joined(separator: "\n"))
        }
        let from = recording.inputsBefore > 0
            ? " (from the checkpoint after the daemon's first \(recording.inputsBefore) inputs, which the ring let go)" : ""
        Output.line("\(recording.inputs.count) inputs replayed: the decisions are equal\(from)")
    }
}

/// The recording file: one JSON document (format `bgtaskd-recording`, a version).
enum RecordingFile {
    static func write(_ bytes: [UInt8], to path: String) throws(CtlError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CtlError("cannot write \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        // An existing file keeps its mode on O_TRUNC: it holds app IDs and payloads, so 0600 in any case.
        guard fchmod(fd, 0o600) == 0 else { throw CtlError("cannot set the mode of \(path): \(String(cString: strerror(errno)))") }
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress.map { $0 + off }, $0.count - off) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw CtlError("cannot write \(path): \(String(cString: strerror(errno)))") }
            off += n
        }
    }

    static func read(_ path: String) throws(CtlError) -> CoreRecording {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CtlError("cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw CtlError("cannot read \(path): \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            bytes += chunk[0..<n]
        }
        let json: JSON
        do {
            json = try JSON.parse(bytes)
        } catch {
            throw CtlError("\(path) is not a recording: not JSON (\(error))")
        }
        guard json["format"]?.stringValue == CoreRecording.formatName else {
            throw CtlError("\(path) is not a recording: its format is not \(CoreRecording.formatName)")
        }
        guard let version = json["version"]?.intValue, version == CoreRecording.currentVersion else {
            let older = json["version"]?.intValue.map { $0 < CoreRecording.currentVersion } ?? false
                ? " (an older bgtaskd wrote it, without the core's checkpoint: record it again with this one)" : ""
            throw CtlError("\(path): recording version \(json["version"]?.serialized() ?? "missing") is not \(CoreRecording.currentVersion), the one this bgtaskctl reads\(older)")
        }
        let recording: CoreRecording
        do {
            recording = try json.decode(CoreRecording.self)
        } catch {
            throw CtlError("\(path) is not a recording: \(error)")
        }
        if let problem = recording.checkpoint.checkpointProblem {
            throw CtlError("\(path) is not a recording: its checkpoint \(problem)")
        }
        return recording
    }
}
