import Foundation

/// A fresh directory under the system's temporary directory, removed by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() throws {
        let base = FileManager.default.temporaryDirectory.path
        path = base + "/bgtaskconfig-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// Writes `text` to `relativePath`, creating directories on the way; returns the full path.
    @discardableResult
    func write(_ relativePath: String, _ text: String) throws -> String {
        let full = path + "/" + relativePath
        let directory = (full as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: full))
        return full
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// The repository's root, found from this file's real location (the test directory may be reached by a link).
func repositoryRoot(filePath: String = #filePath) -> String {
    let resolved = URL(fileURLWithPath: filePath).resolvingSymlinksInPath().path
    var url = URL(fileURLWithPath: resolved)
    for _ in 0..<3 {  // Tests/BGTaskConfigTests/File.swift
        url.deleteLastPathComponent()
    }
    return url.path
}
