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
    directory.hasSuffix("/") ? directory + name : directory + "/" + name
}

/// `stat(2)` following links: `nil` when the path does not resolve (missing, dangling link, no access).
private func fileStatus(_ path: String) -> stat? {
    var st = stat()
    return stat(path, &st) == 0 ? st : nil
}

private func isDirectory(_ st: stat) -> Bool { (st.st_mode & S_IFMT) == S_IFDIR }

/// Reads a UTF-8 text file. A file that does not exist is `.missing`, not an error.
func readTextFile(_ path: String) -> FileRead {
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
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        names.append(name)
    }
    let paths = names
        .filter { !$0.hasPrefix(".") && $0.hasSuffix(suffix) && $0.count > suffix.count }
        .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        .map { joinPath(directory, $0) }
        .filter { path in fileStatus(path).map { !isDirectory($0) } ?? true }
    return .success(paths)
}
