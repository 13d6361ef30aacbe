import Foundation

/// A fresh folder under the temp directory, removed by `remove()`.
struct TemporaryFolder {
    let path: String

    init(_ label: String) throws {
        path = NSTemporaryDirectory() + "ingest-\(label)-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// Writes `contents` at `relative` (folders made as needed) and returns the full path.
    @discardableResult
    func file(_ relative: String, _ contents: String = "x") throws -> String {
        let full = path + "/" + relative
        try FileManager.default.createDirectory(
            atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(contents.utf8).write(to: URL(fileURLWithPath: full))
        return full
    }

    func folder(_ relative: String) throws -> String {
        let full = path + "/" + relative
        try FileManager.default.createDirectory(atPath: full, withIntermediateDirectories: true)
        return full
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}
