import BGTaskCommandLine
import BGTaskProtocol

#if canImport(Glibc)
import Glibc
#endif

/// `bgtaskctl snapshot APP [--scene ID] -o FILE` (SPEC §15): copies out the app's last scene snapshot, as the
/// App Switcher shows it. The file is read directly (root or `ControlGroup=` can read the directory).
struct Snapshot: CtlVerb {
    static let verb = VerbLine.Verb(
        "snapshot", abstract: "Copy out an app's last scene snapshot (a PNG) to FILE (GetApp's scenes).",
        options: GlobalOptions.options + [
            Option("scene", help: "The scene (default: the one whose snapshot is newest)."),
            Option("output", help: "Where to write the PNG ('-': standard output).", short: ["o"]),
        ],
        arguments: [appArgument])

    var global: GlobalOptions
    var app: String
    var scene: String?
    var output: String

    init(_ p: VerbLine.Parsed) throws(VerbLine.Stop) {
        global = GlobalOptions(p)
        app = p.arguments[0]
        scene = p.options["scene"]
        guard let output = p.options["output"] else { throw .usage("Missing expected argument '--output <output>'") }
        self.output = output
    }

    func run() throws {
        let (reply, _) = try global.connect().manager(.getApp, ManagerWire.GetApp(appId: app), reply: ManagerWire.GetAppReply.self)
        let scenes = reply.app.scenes.filter { $0.snapshotPath != nil }
        let chosen = scene.map { id in scenes.first { $0.sceneId == id } }
            ?? scenes.max { ($0.snapshotRealtimeUSec ?? 0) < ($1.snapshotRealtimeUSec ?? 0) }
        guard let chosen, let path = chosen.snapshotPath else {
            throw CtlError(scene.map { "scene \($0) of \(app) has no snapshot" } ?? "\(app) has no scene snapshot")
        }
        let input = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard input >= 0 else { throw CtlError("cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(input) }
        let out = output == "-" ? 1 : open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard out >= 0 else { throw CtlError("cannot write \(output): \(String(cString: strerror(errno)))") }
        defer { if out != 1 { close(out) } }
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else { throw CtlError("cannot read \(path): \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            var done = 0
            while done < n {
                let w = buffer[done..<n].withUnsafeBytes { write(out, $0.baseAddress, $0.count) }
                if w < 0, errno == EINTR { continue }
                guard w > 0 else { throw CtlError("cannot write \(output): \(String(cString: strerror(errno)))") }
                done += w
            }
        }
    }
}
