import BGTaskConfig
import BGTaskCore
import Glibc
import Testing
@testable import BGTaskDaemon

/// The `cgroup.freeze` descriptors the cgroup freezer keeps from a freeze to the thaw (ordinary files stand
/// in for the cgroup's here; test_freezer.py freezes and thaws real cgroups through them).
@Suite struct FreezeDescriptorsTests {
    func directory() -> String {
        var template = Array("/tmp/bgtaskd-freezefds-XXXXXX".utf8CString)
        return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }

    func contents(_ path: String) -> String? { FileIO.read(path) }

    func make(_ path: String) -> Bool {
        let fd = creat(path, 0o644)
        defer { if fd >= 0 { Glibc.close(fd) } }
        return fd >= 0
    }

    @Test func aThawWritesThroughTheDescriptorKeptSinceTheFreeze() throws {
        let dir = directory()
        defer { _ = system("rm -rf \(dir)") }
        let app = try #require(AppID("org.example.Mail"))
        let path = dir + "/cgroup.freeze"
        #expect(make(path))
        var files = FreezeDescriptors()
        #expect(files.writeKept(app, UInt8(ascii: "0")) == nil, "nothing kept before a freeze")
        #expect(files.write(app, UInt8(ascii: "1"), path: path) == 0)
        #expect(contents(path) == "1")
        // The path is gone: only the kept descriptor can still reach the file.
        #expect(rename(path, dir + "/moved") == 0)
        #expect(files.writeKept(app, UInt8(ascii: "0")) == 0)
        #expect(contents(dir + "/moved") == "0")
        files.close(app)
        #expect(files.writeKept(app, UInt8(ascii: "0")) == nil)
    }

    @Test func atMostTheLimitAreKeptTheLeastRecentlyFrozenClosedFirst() throws {
        let dir = directory()
        defer { _ = system("rm -rf \(dir)") }
        var files = FreezeDescriptors()
        let apps = (0..<(FreezeDescriptors.limit + 2)).compactMap { AppID("org.example.App\($0)") }
        for (k, app) in apps.enumerated() {
            let path = dir + "/\(k)"
            #expect(make(path))
            #expect(files.write(app, UInt8(ascii: "1"), path: path) == 0)
        }
        #expect(files.count == FreezeDescriptors.limit)
        #expect(files.writeKept(apps[0], UInt8(ascii: "0")) == nil)
        #expect(files.writeKept(apps[1], UInt8(ascii: "0")) == nil)
        #expect(files.writeKept(apps[2], UInt8(ascii: "0")) == 0)
        files.closeAll()
        #expect(files.count == 0)
    }
}
