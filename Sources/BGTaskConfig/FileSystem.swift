#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// Plain POSIX calls, no Foundation: the daemon links this module, and Foundation (with ICU) would cost it
// several MiB of resident memory for a handful of file reads.

/// The outcome of reading one file.
enum FileRead {
    case missing
    case text(String)
    case failed(ConfigError.Kind)
}

func joinPath(_ directory: String, _ name: String) -> String {
    // Made at its size: a concatenation grows its buffer as it goes (10,000 manifests' paths: 1.4 MiB).
    let slash = directory.hasSuffix("/") ? 0 : 1
    var path = ""
    path.reserveCapacity(directory.utf8.count + slash + name.utf8.count)
    path += directory
    if slash == 1 { path += "/" }
    path += name
    return path
}

/// `stat(2)` following links: `nil` when the path does not resolve (missing, dangling link, no access).
private func fileStatus(_ path: String) -> stat? {
    var st = stat()
    return stat(path, &st) == 0 ? st : nil
}

private func isDirectory(_ st: stat) -> Bool { (st.st_mode & S_IFMT) == S_IFDIR }

/// Everything left to read on `fd`, into a buffer of `sizeHint + 1` bytes first (one read(2) for a
/// file whose size is known); nil on a read error.
private func readAll(_ fd: Int32, sizeHint: Int) -> [UInt8]? {
    var out = [UInt8](repeating: 0, count: sizeHint + 1)
    var used = 0
    while true {
        if used == out.count { out.append(contentsOf: repeatElement(0, count: max(4096, out.count))) }
        let n = out.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + used, $0.count - used) }
        if n < 0 && errno == EINTR { continue }
        if n < 0 { return nil }
        if n == 0 { break }
        used += n
    }
    out.removeLast(out.count - used)
    return out
}

/// Reads a UTF-8 text file. A file that does not exist is `.missing`, not an error.
/// Linux's O_NOATIME (glibc defines it only under _GNU_SOURCE, which Swift's Glibc module does not set).
private let oNoAtime: Int32 = 0o1000000

func readTextFile(_ path: String) -> FileRead {
    // issue 15: the common case in one open, one fstat and one read into a buffer of the file's size
    // (ten thousand manifests at start-up); anything unusual takes the path below, as before.
    // O_NOATIME where allowed (the file's owner or CAP_FOWNER, so root): ten thousand atime updates
    // were 7% of start-up's samples (ext4 marking each inode dirty); else as before.
    var fd = open(path, O_RDONLY | O_CLOEXEC | oNoAtime)
    if fd < 0 && errno == EPERM { fd = open(path, O_RDONLY | O_CLOEXEC) }
    if fd >= 0 {
        defer { close(fd) }
        var st = stat()
        if fstat(fd, &st) == 0 {
            if isDirectory(st) { return .failed(.unreadable("is a directory")) }
            if (st.st_mode & S_IFMT) == S_IFREG, st.st_size >= 0, st.st_size < 1 << 24,
                let bytes = readAll(fd, sizeHint: Int(st.st_size))
            {
                guard let text = String(validating: bytes, as: UTF8.self) else { return .failed(.invalidEncoding) }
                return .text(text)
            }
        }
    }
    guard let st = fileStatus(path) else { return .missing }
    if isDirectory(st) {
        return .failed(.unreadable("is a directory"))
    }
    guard let bytes = FileIO.readBytes(path) else {
        return .failed(.unreadable(access(path, R_OK) == 0 ? "read error" : "permission denied"))
    }
    guard let text = String(validating: bytes, as: UTF8.self) else {
        return .failed(.invalidEncoding)
    }
    return .text(text)
}


/// The paths of the regular files (or links to them) in `directory` whose names end in `suffix`, sorted
/// bytewise by name like systemd. Hidden files are skipped; a missing directory is empty, one that cannot
/// be listed is an error.
func listDirectory(_ directory: String, suffix: String) -> Result<[String], ConfigError> {
    listDirectoryNames(directory, suffix: suffix).map { names in names.map { joinPath(directory, $0) } }
}

/// The names `listDirectory` gives the paths of, in the same order.
func listDirectoryNames(_ directory: String, suffix: String) -> Result<[String], ConfigError> {
    guard fileStatus(directory) != nil else {
        return .success([])
    }
    guard let dir = opendir(directory) else {
        return .failure(ConfigError(.unreadable("cannot list directory"), at: SourceLocation(file: directory, line: 0)))
    }
    defer { closedir(dir) }
    var names: [String] = []
    while true {
        errno = 0
        guard let entry = readdir(dir) else {
            if errno != 0 {
                return .failure(
                    ConfigError(.unreadable("cannot list directory"), at: SourceLocation(file: directory, line: 0)))
            }
            break
        }
        let name = FileIO.name(of: entry)
        // issue 15: the entry's type from readdir where the file system gives it (no stat per file);
        // a link or an unknown type is looked at with stat(2) as before.
        guard !name.hasPrefix("."), name.hasSuffix(suffix), name.utf8.count > suffix.utf8.count else { continue }
        let type = entry.pointee.d_type
        if type == UInt8(DT_DIR) { continue }
        if type != UInt8(DT_REG), let st = fileStatus(joinPath(directory, name)), isDirectory(st) { continue }
        names.append(name)
    }
    // Bytewise, as `utf8.lexicographicallyPrecedes` and strcmp, by keys made once (`UTF8Order`).
    return .success(UTF8Order.sortedIndices(names).map { names[$0] })
}
