import BGTaskClient

#if canImport(Glibc)
import Glibc
#endif

/// The app's windows: one note each. The compositor (bgtaskd-focus) reports each window as a scene;
/// `bgtaskctl foreground org.example.Notes --scene left` does the same by hand.
@MainActor
final class NotesDelegate: BGApplicationDelegate, BGSceneDelegate {
    var notes: [String: String] = [:]
    /// A note that must not show in the App Switcher.
    var privateScenes: Set<String> = ["diary"]

    func scene(_ scene: BGScene, willConnectTo application: BGApplication) {
        notes[scene.id] = scene.title.isEmpty ? "Note \(scene.id)" : scene.title
        print("scene \(scene.id) connected")
        // The hook per scene: UIKit takes the snapshot itself; here each window renders its own.
        application.setSnapshotHook(forScene: scene.id) { [unowned self] scene, path in
            self.writeSnapshot(of: scene, to: path)
        }
    }

    func sceneDidBecomeActive(_ scene: BGScene) { print("scene \(scene.id) active") }
    func sceneWillResignActive(_ scene: BGScene) { print("scene \(scene.id) resigns active") }
    func sceneDidEnterBackground(_ scene: BGScene) { print("scene \(scene.id) in the background") }
    func sceneDidDisconnect(_ scene: BGScene) {
        notes[scene.id] = nil
        print("scene \(scene.id) closed")
    }

    func applicationDidEnterBackground(_ application: BGApplication) { print("the app is in the background") }

    /// A 64×48 PNG: the note's colour, grey when private.
    func writeSnapshot(of scene: BGScene, to path: String) -> Bool {
        let hidden = privateScenes.contains(scene.id)
        let seed = (notes[scene.id] ?? scene.id).utf8.reduce(UInt32(7)) { $0 &* 31 &+ UInt32($1) }
        let rgb: [UInt8] = hidden ? [128, 128, 128] : [UInt8(seed & 0xFF), UInt8((seed >> 8) & 0xFF), UInt8((seed >> 16) & 0xFF)]
        let png = PNG.solid(width: 64, height: 48, rgb: rgb)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o640)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let written = png.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        print("scene \(scene.id) snapshot: \(path)\(hidden ? " (hidden)" : "")")
        return written == png.count
    }
}

/// A minimal PNG encoder (stored deflate blocks): enough for a snapshot of a solid colour.
enum PNG {
    static func solid(width: Int, height: Int, rgb: [UInt8]) -> [UInt8] {
        var raw: [UInt8] = []
        for _ in 0..<height {
            raw.append(0)  // filter: none
            for _ in 0..<width { raw += rgb }
        }
        var header: [UInt8] = []
        header += be32(UInt32(width)) + be32(UInt32(height)) + [8, 2, 0, 0, 0]
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
            + chunk("IHDR", header) + chunk("IDAT", zlibStored(raw)) + chunk("IEND", [])
    }

    static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let n = min(65535, data.count - offset)
            let last: UInt8 = offset + n == data.count ? 1 : 0
            out += [last, UInt8(n & 0xFF), UInt8(n >> 8), UInt8(~n & 0xFF), UInt8((~n >> 8) & 0xFF)]
            out += data[offset..<offset + n]
            offset += n
        } while offset < data.count
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in data {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        return out + be32(b << 16 | a)
    }

    static func chunk(_ kind: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(kind.utf8) + data
        return be32(UInt32(data.count)) + body + be32(crc32(body))
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            c ^= UInt32(byte)
            for _ in 0..<8 { c = c & 1 == 1 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        }
        return ~c
    }

    static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
}
