#if canImport(Glibc)
import Glibc
#endif
import BGTaskModel

/// What names one version of a file's content: the file `stat(2)` reaches (following links: a link
/// pointed elsewhere reaches another device or inode), its size, and its mtime and ctime to the
/// nanosecond. Every write to a file sets its ctime to the current time, which no program can set back;
/// so equal stamps mean the content read then is the content now, provided the file had not been
/// written within a timestamp tick of being read (`ManifestCache.settleNanoseconds`).
struct FileStamp: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var mtime: Int64
    var ctime: Int64

    init(device: UInt64, inode: UInt64, size: Int64, mtime: Int64, ctime: Int64) {
        (self.device, self.inode, self.size, self.mtime, self.ctime) = (device, inode, size, mtime, ctime)
    }

    init(_ st: stat) {
        self.init(device: UInt64(st.st_dev), inode: UInt64(st.st_ino), size: Int64(st.st_size),
                  mtime: Int64(st.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(st.st_mtim.tv_nsec),
                  ctime: Int64(st.st_ctim.tv_sec) &* 1_000_000_000 &+ Int64(st.st_ctim.tv_nsec))
    }
}

/// The manifests of `apps.d` as parsed at an earlier start, each with the stamp its file had then
/// (`/var/lib/bgtaskd/manifest-cache`): a start re-reads only the files whose stamp changed.
///
/// It also keeps the directory's listing (every `.app` name, in order) with the directory's own stamp
/// taken before it was listed: a file added, removed or renamed changes the directory's mtime and ctime,
/// so while the directory's stamp is the one kept, the listing is too and the directory is not read again
/// (with 10,000 manifests its listing was a quarter of the start-up's CPU). An edit in place does not
/// change the directory; each file's own stamp still catches it.
///
/// Only manifests that parsed without an error or a warning are kept, so a bad manifest is always read
/// and reported (file, line, key) as without a cache. The file is read whole and used only when its
/// magic, version, apps directory and checksums all match: anything else (missing, truncated, corrupt, of
/// another version or directory) is no cache. It is replaced atomically (a temporary file, fsync,
/// rename), never written in place.
public struct ManifestCache: Sendable {
    /// The file's name in the state directory.
    public static let fileName = "manifest-cache"
    static let magic: [UInt8] = Array("BGTDMC\n\0".utf8)
    static let formatVersion: UInt32 = 2
    /// A file changed less than this before it was read is read again next time rather than kept: a
    /// second write within one tick of the clock the kernel stamps files with (1–10 ms; a whole second
    /// on file systems that keep seconds only) could leave size, mtime and ctime as they were. The same
    /// holds for the directory and its listing.
    static let settleNanoseconds: Int64 = 2_000_000_000
    /// Names per part of the file: the parts are checked and decoded in parallel.
    static let namesPerPart = 1024

    /// The apps directory the manifests were read from.
    var appsDirectory: String
    /// The directory's stamp when `names` was listed, when it had settled by then (nil: list it again).
    var directoryStamp: FileStamp?
    /// The directory's `.app` files as listed (`listDirectoryNames`), in order.
    var names: [String]
    /// For each name: the stamp its file had when its manifest was read, nil when none is kept.
    var stamps: [FileStamp?]
    /// For each name: the manifest kept, nil when none is.
    var manifests: [AppManifestFile?]

    init(appsDirectory: String, directoryStamp: FileStamp?, names: [String], stamps: [FileStamp?],
         manifests: [AppManifestFile?]) {
        precondition(names.count == stamps.count && names.count == manifests.count)
        self.appsDirectory = appsDirectory
        self.directoryStamp = directoryStamp
        self.names = names
        self.stamps = stamps
        self.manifests = manifests
    }

    /// The number of manifests kept.
    public var count: Int { stamps.reduce(0) { $0 + ($1 == nil ? 0 : 1) } }

    /// The cache at `path` for `appsDirectory`; nil when there is none usable.
    public static func read(path: String, appsDirectory: String) -> ManifestCache? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_size > 0, st.st_size < 1 << 30 else { return nil }
        // One read into a buffer of the file's size (a file that grew or shrank since is no cache).
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size))
        var used = 0
        while used < bytes.count {
            let n = bytes.withUnsafeMutableBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return Glibc.read(fd, base + used, raw.count - used)
            }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            used += n
        }
        return decode(bytes, appsDirectory: appsDirectory)
    }

    /// Writes the cache to `path` atomically; false when it could not (the old file, if any, stays).
    @discardableResult
    public func write(to path: String) -> Bool {
        let bytes = encode()
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        var offset = 0
        var ok = true
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return Glibc.write(fd, base + offset, raw.count - offset)
            }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { ok = false; break }
            offset += n
        }
        if ok && fsync(fd) != 0 { ok = false }
        close(fd)
        guard ok, rename(temporary, path) == 0 else {
            unlink(temporary)
            return false
        }
        return true
    }

    // MARK: The format
    //
    // The header: magic, version, apps directory, the directory's stamp (a tag, then five integers),
    // the number of names, the number of parts, for each part its number of names, its length in bytes
    // and its checksum; then the header's own checksum. Then the parts, one after the other: each name
    // with its entry (a tag, then the stamp and the manifest's keys). Checksums: `checksum64`.

    func encode() -> [UInt8] {
        var parts: [[UInt8]] = []
        var counts: [Int] = []
        var i = 0
        while i < names.count {
            let end = min(names.count, i + Self.namesPerPart)
            var part: [UInt8] = []
            part.reserveCapacity((end - i) * 160)
            for k in i..<end { appendItem(k, to: &part) }
            parts.append(part)
            counts.append(end - i)
            i = end
        }
        var out = Self.magic
        out.appendInteger(Self.formatVersion)
        out.appendString(appsDirectory)
        if let d = directoryStamp {
            out.append(1)
            out.appendStamp(d)
        } else {
            out.append(0)
        }
        out.appendInteger(UInt32(names.count))
        out.appendInteger(UInt32(parts.count))
        for (part, count) in zip(parts, counts) {
            out.appendInteger(UInt32(count))
            out.appendInteger(UInt64(part.count))
            out.appendInteger(part.withUnsafeBytes(checksum64))
        }
        out.appendInteger(out.withUnsafeBytes(checksum64))
        out.reserveCapacity(out.count + parts.reduce(0) { $0 + $1.count })
        for part in parts { out += part }
        return out
    }

    private func appendItem(_ k: Int, to out: inout [UInt8]) {
        out.appendString(names[k])
        guard let s = stamps[k], let m = manifests[k] else {
            out.append(0)
            return
        }
        out.append(1)
        out.appendStamp(s)
        out.appendString(m.id)
        if m.name == m.id { out.append(0) } else { out.append(1); out.appendString(m.name) }
        out.appendStrings(m.exec)
        switch m.user {
        case nil: out.append(0)
        case .name(let name)?: out.append(1); out.appendString(name)
        case .id(let id)?: out.append(2); out.appendInteger(id)
        }
        if let dir = m.workingDirectory { out.append(1); out.appendString(dir) } else { out.append(0) }
        out.appendStrings(m.environment.flatMap { [$0.name, $0.value] })
        out.appendStrings(BackgroundMode.allCases.filter { m.backgroundModes.contains($0) }.map(\.rawValue))
        out.appendStrings(m.permittedTaskIdentifiers)
        out.append(m.backgroundAppRefresh.map { $0 ? 2 : 1 } ?? 0)
        out.append(m.refreshRestricted ? 1 : 0)
        out.append(m.lifecycleAware ? 1 : 0)
    }

    static func decode(_ bytes: [UInt8], appsDirectory: String) -> ManifestCache? {
        var r = ByteReader(bytes: bytes[...])
        guard bytes.starts(with: magic) else { return nil }
        r.offset = magic.count
        guard r.integer(UInt32.self) == formatVersion, r.string() == appsDirectory, let tag = r.byte(), tag <= 1 else {
            return nil
        }
        var directoryStamp: FileStamp?
        if tag == 1 {
            guard let d = r.stamp() else { return nil }
            directoryStamp = d
        }
        guard let total = r.integer(UInt32.self), let partCount = r.integer(UInt32.self),
              Int(partCount) <= bytes.count / 20
        else { return nil }
        var parts: [(count: Int, range: Range<Int>, sum: UInt64)] = []
        parts.reserveCapacity(Int(partCount))
        var lengths = 0
        for _ in 0..<partCount {
            guard let count = r.integer(UInt32.self), let length = r.integer(UInt64.self), length < 1 << 31,
                  let sum = r.integer(UInt64.self)
            else { return nil }
            parts.append((Int(count), lengths..<(lengths + Int(length)), sum))
            lengths += Int(length)
        }
        let headerEnd = r.offset
        guard let headerSum = r.integer(UInt64.self),
              headerSum == bytes.withUnsafeBytes({ checksum64(UnsafeRawBufferPointer(rebasing: $0[..<headerEnd])) }),
              parts.reduce(0, { $0 + $1.count }) == Int(total), bytes.count - r.offset == lengths
        else { return nil }
        let body = r.offset
        // Each part checked and decoded on its own (in parallel): names, stamps, manifests.
        let decoded = parallelMap(parts, minimumPerThread: 1) { part -> ([String], [FileStamp?], [AppManifestFile?])? in
            let range = (body + part.range.lowerBound)..<(body + part.range.upperBound)
            guard bytes.withUnsafeBytes({ checksum64(UnsafeRawBufferPointer(rebasing: $0[range])) }) == part.sum else {
                return nil
            }
            var reader = ByteReader(bytes: bytes[range])
            var names: [String] = [], stamps: [FileStamp?] = [], manifests: [AppManifestFile?] = []
            names.reserveCapacity(part.count)
            stamps.reserveCapacity(part.count)
            manifests.reserveCapacity(part.count)
            for _ in 0..<part.count {
                guard let name = reader.string(), let tag = reader.byte(), tag <= 1 else { return nil }
                names.append(name)
                if tag == 0 {
                    stamps.append(nil)
                    manifests.append(nil)
                    continue
                }
                guard let stamp = reader.stamp(), let manifest = reader.manifest(name: name, appsDirectory: appsDirectory) else {
                    return nil
                }
                stamps.append(stamp)
                manifests.append(manifest)
            }
            return reader.offset == range.upperBound ? (names, stamps, manifests) : nil
        }
        var names: [String] = [], stamps: [FileStamp?] = [], manifests: [AppManifestFile?] = []
        names.reserveCapacity(Int(total))
        stamps.reserveCapacity(Int(total))
        manifests.reserveCapacity(Int(total))
        // Each part's names and manifests moved, not copied: a copy retained every string of every
        // manifest once more, and freeing the part released them all again.
        for case var part? in consume decoded {
            moveAll(&part.0, into: &names, leaving: "")
            stamps += part.1
            moveAll(&part.2, into: &manifests, leaving: nil)
        }
        guard names.count == Int(total) else { return nil }
        return ManifestCache(appsDirectory: appsDirectory, directoryStamp: directoryStamp, names: names, stamps: stamps,
                             manifests: manifests)
    }
}

/// Appends `source`'s elements to `destination` by moving them, leaving `placeholder` in each place.
private func moveAll<T>(_ source: inout [T], into destination: inout [T], leaving placeholder: T) {
    source.withUnsafeMutableBufferPointer { buffer in
        for i in buffer.indices {
            destination.append(buffer.moveElement(from: i))
            buffer.initializeElement(at: i, to: placeholder)
        }
    }
}

/// A checksum of `bytes` for telling a damaged file: FNV-1a's step over 8-byte words (then the bytes
/// left), each step followed by a shift of the high half down. Every step is a bijection of the state, so
/// a change in any one word always changes the result. ~8× FNV-1a over bytes (10,000 manifests: 2.8 ms).
func checksum64(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
    var h: UInt64 = 0xcbf2_9ce4_8422_2325 ^ UInt64(bytes.count)
    var i = 0
    while i + 8 <= bytes.count {
        h = (h ^ bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0x100_0000_01b3
        h ^= h >> 32
        i += 8
    }
    while i < bytes.count {
        h = (h ^ UInt64(bytes[i])) &* 0x100_0000_01b3
        h ^= h >> 32
        i += 1
    }
    return h
}

extension [UInt8] {
    fileprivate mutating func appendInteger<T: FixedWidthInteger>(_ v: T) {
        Swift.withUnsafeBytes(of: v.littleEndian) { append(contentsOf: $0) }
    }

    fileprivate mutating func appendString(_ s: String) {
        appendInteger(UInt32(s.utf8.count))
        append(contentsOf: s.utf8)
    }

    fileprivate mutating func appendStamp(_ s: FileStamp) {
        for v in [s.device, s.inode, UInt64(bitPattern: s.size), UInt64(bitPattern: s.mtime), UInt64(bitPattern: s.ctime)] {
            appendInteger(v)
        }
    }

    fileprivate mutating func appendStrings(_ list: [String]) {
        appendInteger(UInt32(list.count))
        for s in list { appendString(s) }
    }
}

/// Reads the format back; nil at the first thing out of bounds or out of place.
private struct ByteReader {
    let bytes: ArraySlice<UInt8>
    var offset: Int

    init(bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        offset = bytes.startIndex
    }

    mutating func integer<T: FixedWidthInteger>(_: T.Type) -> T? {
        let size = MemoryLayout<T>.size
        guard bytes.endIndex - offset >= size else { return nil }
        let v = bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset - bytes.startIndex, as: T.self) }
        offset += size
        return T(littleEndian: v)
    }

    mutating func byte() -> UInt8? { integer(UInt8.self) }

    mutating func string() -> String? {
        guard let n = integer(UInt32.self), bytes.endIndex - offset >= Int(n) else { return nil }
        let s = String(decoding: bytes[offset..<(offset + Int(n))], as: UTF8.self)
        offset += Int(n)
        return s
    }

    mutating func strings() -> [String]? {
        guard let n = integer(UInt32.self), Int(n) <= bytes.endIndex - offset else { return nil }
        var out: [String] = []
        out.reserveCapacity(Int(n))
        for _ in 0..<n {
            guard let s = string() else { return nil }
            out.append(s)
        }
        return out
    }

    mutating func stamp() -> FileStamp? {
        guard let device = integer(UInt64.self), let inode = integer(UInt64.self), let size = integer(UInt64.self),
              let mtime = integer(UInt64.self), let ctime = integer(UInt64.self)
        else { return nil }
        return FileStamp(device: device, inode: inode, size: Int64(bitPattern: size),
                         mtime: Int64(bitPattern: mtime), ctime: Int64(bitPattern: ctime))
    }

    /// The manifest of the file `name` in `appsDirectory`.
    mutating func manifest(name fileName: String, appsDirectory: String) -> AppManifestFile? {
        guard let id = string(), let nameTag = byte() else { return nil }
        let name: String
        switch nameTag {
        case 0: name = id
        case 1: guard let s = string() else { return nil }; name = s
        default: return nil
        }
        guard let exec = strings(), !exec.isEmpty, let userTag = byte() else { return nil }
        var user: Account?
        switch userTag {
        case 0: user = nil
        case 1: guard let s = string() else { return nil }; user = .name(s)
        case 2: guard let v = integer(UInt32.self) else { return nil }; user = .id(v)
        default: return nil
        }
        guard let dirTag = byte(), dirTag <= 1 else { return nil }
        var workingDirectory: String?
        if dirTag == 1 {
            guard let s = string() else { return nil }
            workingDirectory = s
        }
        guard let env = strings(), env.count % 2 == 0, let modeNames = strings(), let permitted = strings(),
              let refresh = byte(), refresh <= 2, let restricted = byte(), restricted <= 1,
              let aware = byte(), aware <= 1
        else { return nil }
        var modes: Set<BackgroundMode> = []
        for raw in modeNames {
            guard let mode = BackgroundMode(rawValue: raw) else { return nil }
            modes.insert(mode)
        }
        let environment = stride(from: 0, to: env.count, by: 2).map { EnvironmentVariable(name: env[$0], value: env[$0 + 1]) }
        var manifest = AppManifestFile(
            id: id, name: name, exec: exec, user: user, workingDirectory: workingDirectory,
            environment: environment, backgroundModes: modes, permittedTaskIdentifiers: permitted,
            backgroundAppRefresh: refresh == 0 ? nil : refresh == 2, refreshRestricted: restricted == 1,
            lifecycleAware: aware == 1, path: "")
        manifest.setPath(directory: appsDirectory, fileName: fileName)
        return manifest
    }
}
