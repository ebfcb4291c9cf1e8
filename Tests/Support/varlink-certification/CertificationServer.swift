import BGTaskVarlink
import BGTaskProtocol
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// `varlink-certification [--varlink=]unix:PATH` (or a bare PATH; or a socket passed by systemd):
/// serves `org.varlink.certification` on the project's own Varlink layer until SIGTERM/SIGINT.
final class CertificationServer: @unchecked Sendable {
    // @unchecked: mutable state is touched only on `queue`.
    let queue = DispatchQueue(label: "varlink-certification")
    let service = CertificationService()
    var server: VarlinkServer?
    var signalSources: [any DispatchSourceSignal] = []
    let boundPath: String?
    let fd: Int32

    init(fd: Int32, boundPath: String?) {
        self.fd = fd
        self.boundPath = boundPath
    }

    static func main() -> Never {
        let args = Array(CommandLine.arguments.dropFirst())
        var address: String?
        var i = 0
        while i < args.count {
            let a = args[i]
            if a == "-h" || a == "--help" {
                write(usage + "\n", to: 1)
                exit(0)
            } else if a.hasPrefix("--varlink=") {
                address = String(a.dropFirst("--varlink=".count))
            } else if a == "--varlink", i + 1 < args.count {
                i += 1
                address = args[i]
            } else if !a.hasPrefix("-"), address == nil {
                address = a
            } else {
                fail("unexpected argument '\(a)'\n\(usage)", status: 2)
            }
            i += 1
        }

        let fd: Int32
        var boundPath: String?
        if let address {
            let path: String
            switch parse(address: address) {
            case .success(let p): path = p
            case .failure(let error): fail(error.description, status: 2)
            }
            do {
                fd = try ListeningSocket.bind(path: path)
            } catch {
                fail(error.description, status: 1)
            }
            boundPath = path
        } else if let passed = ListeningSocket.fromSystemd() {
            fd = passed
        } else {
            fail(usage, status: 2)
        }

        let main = CertificationServer(fd: fd, boundPath: boundPath)
        main.queue.async { main.start() }
        dispatchMain()
    }

    static let usage = "usage: varlink-certification [--varlink=]unix:PATH | PATH"

    struct AddressError: Error, CustomStringConvertible { let description: String }

    /// `unix:PATH[;mode=…]` or a bare path. Abstract (`@`) and TCP addresses are not served.
    static func parse(address: String) -> Result<String, AddressError> {
        var a = Substring(address)
        if a.hasPrefix("unix:") { a = a.dropFirst("unix:".count) } else if a.contains(":") && !a.hasPrefix("/") {
            return .failure(AddressError(description: "\(address): only unix: addresses are served"))
        }
        if let semi = a.firstIndex(of: ";") { a = a[..<semi] }
        if a.isEmpty || a.hasPrefix("@") {
            return .failure(AddressError(description: "\(address): need a socket path"))
        }
        return .success(String(a))
    }

    private func start() {
        let server = VarlinkServer(
            queue: queue, service: service, vendor: "bgtaskd", product: "varlink-certification",
            version: "1", url: "https://varlink.org")
        self.server = server
        server.listen(fd: fd)
        signal(SIGPIPE, SIG_IGN)
        for sig in [SIGTERM, SIGINT] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler { [weak self] in self?.stop() }
            source.resume()
            signalSources.append(source)
        }
        Self.write("Listening on \(boundPath.map { "unix:" + $0 } ?? "the socket passed by systemd")\n", to: 1)
    }

    private func stop() {
        server?.shutdown()
        if let boundPath { unlink(boundPath) }
        exit(0)
    }

    /// Unbuffered, so that a test reading a pipe sees the line at once.
    static func write(_ text: String, to fd: Int32) {
        let bytes = Array(text.utf8)
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + off, $0.count - off) }
            if n <= 0 { return }
            off += n
        }
    }

    static func fail(_ message: String, status: Int32) -> Never {
        write("varlink-certification: \(message)\n", to: 2)
        exit(status)
    }
}
