import Foundation

/// A fresh folder under the temp directory for one test (or one server, or one suite's fixtures): the one
/// temp-folder helper. `remove()` deletes it (tests call it in a `defer`, which also keeps the folder alive to the
/// end of the test); when that was forgotten, the last reference going away deletes it anyway.
final class TemporaryFolder: Sendable {
    let path: String

    /// `label` goes into the folder's name (`ingest-LABEL-PID-XXXXXXXX`) so a left-over folder says whose it was.
    init(_ label: String) throws {
        path = NSTemporaryDirectory() + "ingest-\(label)-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { remove() }

    /// The folder as a file URL, for Foundation APIs that take one.
    var url: URL { URL(fileURLWithPath: path, isDirectory: true) }

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

    /// Deletes the folder and everything in it; calling it again (or after the folder is gone) does nothing.
    func remove() { try? FileManager.default.removeItem(atPath: path) }
}
