import Foundation

/// The outcome of reading one file.
enum FileRead {
    case missing
    case text(String)
    case failed(ConfigError.Kind)
}

func joinPath(_ directory: String, _ name: String) -> String {
    directory.hasSuffix("/") ? directory + name : directory + "/" + name
}

/// Reads a UTF-8 text file. A file that does not exist is `.missing`, not an error.
func readTextFile(_ path: String) -> FileRead {
    let manager = FileManager.default
    var isDirectory: ObjCBool = false
    guard manager.fileExists(atPath: path, isDirectory: &isDirectory) else {
        return .missing
    }
    if isDirectory.boolValue {
        return .failed(.unreadable("is a directory"))
    }
    guard let data = manager.contents(atPath: path) else {
        return .failed(.unreadable(manager.isReadableFile(atPath: path) ? "read error" : "permission denied"))
    }
    guard let text = String(validating: data, as: UTF8.self) else {
        return .failed(.invalidEncoding)
    }
    return .text(text)
}

/// The paths of the regular files (or links to them) in `directory` whose names end in `suffix`, sorted
/// bytewise by name like systemd. Hidden files are skipped; a missing directory is empty, one that cannot
/// be listed is an error.
func listDirectory(_ directory: String, suffix: String) -> Result<[String], ConfigError> {
    let manager = FileManager.default
    guard manager.fileExists(atPath: directory) else {
        return .success([])
    }
    guard let names = try? manager.contentsOfDirectory(atPath: directory) else {
        return .failure(ConfigError(.unreadable("cannot list directory"), at: SourceLocation(file: directory, line: 0)))
    }
    let paths = names
        .filter { !$0.hasPrefix(".") && $0.hasSuffix(suffix) && $0.count > suffix.count }
        .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        .map { joinPath(directory, $0) }
        .filter { path in
            var isDirectory: ObjCBool = false
            return !manager.fileExists(atPath: path, isDirectory: &isDirectory) || !isDirectory.boolValue
        }
    return .success(paths)
}
