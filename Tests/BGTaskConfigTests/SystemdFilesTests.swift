import BGTaskConfig
import Foundation
import Testing

/// The repository's systemd files, read with this package's own systemd.syntax(7) parser.
/// IntegrationTests/check-units.sh runs systemd's own checks (verify, security, catalog, sysusers).
@Suite("systemd files")
struct SystemdFilesTests {
    private func unit(_ name: String) throws -> [String: [String]] {
        let path = repositoryRoot() + "/systemd/" + name
        let file = ParsedConfigFile.parse(try String(contentsOfFile: path, encoding: .utf8), file: path)
        #expect(file.errors.map(\.description) == [])
        var values: [String: [String]] = [:]
        for assignment in file.assignments {
            values["\(assignment.section).\(assignment.key)", default: []].append(assignment.value)
        }
        return values
    }

    @Test func serviceHasTheContractedSettings() throws {
        let service = try unit("bgtaskd.service")
        #expect(service["Service.Type"] == ["notify"])
        #expect(service["Service.NotifyAccess"] == ["main"])
        #expect(service["Service.ExecStart"] == ["/usr/bin/bgtaskd --launcher-socket=/run/bgtaskd-launcher/io.bgtaskd.Launcher"])
        #expect(service["Service.ExecReload"] == ["/bin/kill -HUP $MAINPID"])
        #expect(service["Service.WatchdogSec"].flatMap { $0.last.flatMap(SystemdTimeSpan.parse) } == 30_000_000)
        #expect(service["Service.Delegate"] == ["yes"])
        #expect(service["Service.KillMode"] == ["mixed"])
        #expect(service["Service.RuntimeDirectory"] == ["bgtaskd"])
        #expect(service["Service.RuntimeDirectoryPreserve"] == ["yes"])
        #expect(service["Service.StateDirectory"] == ["bgtaskd"])
        #expect(service["Service.Restart"] == ["on-failure"])
        #expect(service["Service.ProtectControlGroups"] == nil)
        // Privilege separation: the daemon starts no app itself, so its sandbox is its own.
        #expect(service["Service.MemoryDenyWriteExecute"] == ["yes"])
        #expect(service["Service.PrivateNetwork"] == ["yes"])
        #expect(service["Service.ProtectHome"] == ["yes"])
        #expect(service["Service.CapabilityBoundingSet"] == ["CAP_KILL"])
        #expect(service["Service.AmbientCapabilities"] == ["CAP_KILL"])
        #expect(service["Service.RestrictAddressFamilies"] == ["AF_UNIX AF_NETLINK"])
        // A BPF program on the daemon's cgroup would cut every app below it off the network.
        #expect(service["Service.IPAddressDeny"] == nil)
        #expect(service["Unit.Wants"] == ["bgtaskd-launcher.socket"])
        #expect(service["Install.Also"] == ["bgtaskd.socket bgtaskd-launcher.socket"])
        // The user the service runs as is the one bgtaskd.sysusers creates.
        let sysusers = try String(contentsOfFile: repositoryRoot() + "/systemd/bgtaskd.sysusers", encoding: .utf8)
        let user = try #require(service["Service.User"]?.last)
        #expect(sysusers.split(separator: "\n").contains { $0.hasPrefix("u \(user) ") })
    }

    @Test func launcherUnitsMatchTheDaemon() throws {
        let socket = try unit("bgtaskd-launcher.socket")
        let service = try unit("bgtaskd-launcher.service")
        let daemon = try unit("bgtaskd.service")
        let path = try #require(socket["Socket.ListenStream"]?.last)
        #expect(daemon["Service.ExecStart"]?.last?.hasSuffix("--launcher-socket=" + path) == true)
        #expect(socket["Socket.SocketUser"] == daemon["Service.User"])
        #expect(socket["Socket.SocketMode"] == ["0600"])
        #expect(service["Service.ExecStart"] == ["/usr/bin/bgtaskd-launcher --allow-uid=" + (daemon["Service.User"]?.last ?? "")])
        #expect(service["Service.User"] == nil)  // root
        #expect(service["Service.CapabilityBoundingSet"] == ["CAP_SETUID CAP_SETGID CAP_DAC_OVERRIDE"])
        #expect(service["Service.ProtectControlGroups"] == nil)
        // The apps' sandbox: JITs and the network work.
        #expect(service["Service.MemoryDenyWriteExecute"] == nil)
        #expect(service["Service.PrivateNetwork"] == nil)
        #expect(service["Service.NoNewPrivileges"] == ["yes"])
        // The launcher reads the manifests in /etc/bgtaskd/apps.d (its default --config-dir) on every launch.
        #expect(service["Service.ExecStart"]?.last?.contains("--config-dir") == false)
        for hiding in ["InaccessiblePaths", "TemporaryFileSystem", "RootDirectory", "RootImage", "ProtectSystem"]
            where service["Service." + hiding]?.contains(where: { $0 != "strict" }) == true
        {
            Issue.record("bgtaskd-launcher.service: \(hiding)= may hide /etc/bgtaskd from the launcher")
        }
    }

    @Test func socketMatchesTheDefaultConfiguration() throws {
        let socket = try unit("bgtaskd.socket")
        #expect(socket["Socket.ListenStream"] == [DaemonConfig().socket])
        #expect(socket["Socket.FileDescriptorName"] == ["varlink"])
        #expect(socket["Socket.SocketMode"] == ["0666"])
        #expect(socket["Socket.Service"] == ["bgtaskd.service"])
        // The service's runtime directory is the socket's directory.
        let service = try unit("bgtaskd.service")
        #expect(service["Service.RuntimeDirectory"].map { "/run/" + $0[0] + "/io.bgtaskd" } == DaemonConfig().socket)
    }

    @Test func catalogHasOneEntryPerDecisionKind() throws {
        let ids = try String(contentsOfFile: repositoryRoot() + "/systemd/message-ids.txt", encoding: .utf8)
            .split(separator: "\n").filter { !$0.hasPrefix("#") }
            .map { $0.split(separator: " ").map(String.init) }.filter { $0.count == 2 }
        #expect(ids.count == 17)
        let catalog = try String(contentsOfFile: repositoryRoot() + "/systemd/bgtaskd.catalog", encoding: .utf8)
        // Entries start with "-- <id>"; the header lines run to the first empty line.
        var entries: [String: [String]] = [:]
        var current: String?
        var inHeader = false
        for line in catalog.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("-- ") {
                current = String(line.dropFirst(3))
                inHeader = true
                entries[current ?? ""] = []
            } else if line.isEmpty {
                inHeader = false
            } else if inHeader, let id = current {
                entries[id, default: []].append(String(line))
            }
        }
        #expect(Set(entries.keys) == Set(ids.map { $0[1] }))
        for (id, header) in entries {
            #expect(header.contains { $0.hasPrefix("Subject: ") }, "\(id) has no Subject:")
            #expect(header.contains("Defined-By: bgtaskd"), "\(id) has no Defined-By:")
            #expect(header.contains { $0.hasPrefix("Support: ") }, "\(id) has no Support:")
            #expect(id.count == 32 && id.allSatisfy(\.isHexDigit))
        }
    }
}
