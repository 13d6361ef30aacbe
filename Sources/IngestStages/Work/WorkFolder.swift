import Crypto
import Foundation
import IngestCore
import IngestJournal
import NativeSystem

/// The work folder (`.ingest/work`): temp and transcoded files, which belong to the file being worked on and are
/// removed when it is finished. Each run writes only inside a folder of its own there (`RunWorkFolder`), so runs
/// sharing the work folder never remove each other's files.
package enum WorkFolder {
    /// Marks a folder ingest created, so everything in it is ingest's to delete.
    static let marker = ".ingest-work"

    /// Creates the folder (marked) when it is missing. What is in it is left alone: the run folders of other runs,
    /// live or dead, are `RunWorkFolder`'s to judge.
    package static func prepare(_ path: String) throws {
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        if !manager.fileExists(atPath: path, isDirectory: &isDirectory) {
            do {
                try FileSystem.makeFolders(path)
                mark(path)
            } catch {
                throw JournalError("cannot create the work folder \(path): \(error.reason)")
            }
            return
        }
        guard isDirectory.boolValue else { throw JournalError("the work folder \(path) is not a folder") }
        if (try? manager.contentsOfDirectory(atPath: path))?.isEmpty ?? false { mark(path) }
    }

    /// Creates the marker in place: `FileManager.createFile` writes a temp file first, which a kill could leave.
    private static func mark(_ folder: String) {
        try? FileSystem.createEmpty(folder + "/" + marker)
    }

    /// Where a stage that transcodes writes `item`'s new file:
    /// `<work>/<stage>/<root>/<relative dir>/<file name>.<ext>`, `<work>` being the run's own folder, e.g.
    /// `.ingest/work/run-…/2-video/0-clips/day1/clip.mov.mp4`, where `<stage>` is `StageContext.workFolderName(for:)`: the stage's position and name, so two stages of one
    /// kind never share a path. Every item of a run gets its own path, because the runner removes a finished item's
    /// work file: two items sharing one would lose each other's upload depending on which finished first. So
    /// - `<root>` is the input root's position among the roots and its name (`0-clips`, `1-clips`): `a/x.jpg` and
    ///   `b/x.jpg`, or one folder given twice, stay apart;
    /// - the whole original file name stays and the new extension is added (`clip.mov.mp4`): `clip.mov` and
    ///   `clip.mp4` side by side stay apart.
    /// `.` and `..` components are dropped so nothing lands outside the work folder; a name too long for the file
    /// system is shortened with a hash of the full name, so it stays unique.
    static func outputPath(for item: Item, workDirectory: String, stage: String, fileExtension: String) -> String {
        let components = item.relativePath.split(separator: "/").map(String.init).filter { $0 != ".." && $0 != "." }
        let name = components.last ?? "file"
        let directory =
            [workDirectory, stage, rootFolderName(index: item.rootIndex, root: item.root)] + components.dropLast()
        return (directory + [fittedFileName(name, fileExtension: fileExtension)]).joined(separator: "/")
    }

    /// Makes `path` (a stage's new file) the item's artifact. The artifact it replaces, when an earlier stage wrote
    /// it into the work folder (a resize before a recompress), joins the item's temp files: the runner removes it
    /// with them once the item is finished, as it does the last artifact.
    static func replaceArtifact(of item: Item, with path: String, workDirectory: String) {
        let previous = item.artifact
        if previous != path, previous != item.path, contains(previous, folder: workDirectory) {
            item.temporaryFiles.append(previous)
        }
        item.artifact = path
    }

    /// `<index>-<last component of the root>` (`0-clips`; for `.` the current folder's name), or `<index>` alone
    /// when the root has no name (`/`, or an item that was not walked).
    static func rootFolderName(index: Int, root: String) -> String {
        let name = (JournalRecord.canonicalRoot(root) as NSString).lastPathComponent
        guard !name.isEmpty, name != "/" else { return "\(index)" }
        return "\(index)-" + prefix(of: name, maxBytes: 64)
    }

    /// Longest name the file systems ingest runs on accept for one path component (NAME_MAX).
    static let maxNameBytes = 255

    /// `<name>.<ext>`; when that is longer than a file name may be, the name is cut and a hash of the whole name
    /// added (`<start of name>~<8 hex>.<ext>`), so two long names with one start still differ.
    static func fittedFileName(_ name: String, fileExtension: String) -> String {
        let full = name + "." + fileExtension
        guard full.utf8.count > maxNameBytes else { return full }
        let hash = SHA256.hash(data: Data(name.utf8)).hexString.prefix(8)
        let suffix = "~\(hash).\(fileExtension)"
        return prefix(of: name, maxBytes: maxNameBytes - suffix.utf8.count) + suffix
    }

    /// The longest start of `text` that fits in `maxBytes` of UTF-8, cut between characters.
    private static func prefix(of text: String, maxBytes: Int) -> String {
        var result = ""
        var used = 0
        for character in text {
            let size = String(character).utf8.count
            guard used + size <= maxBytes else { break }
            result.append(character)
            used += size
        }
        return result
    }

    /// True when `path` lies inside the work folder `folder` (so it is a work file, not an input).
    package static func contains(_ path: String, folder: String) -> Bool {
        let base = (folder as NSString).standardizingPath
        let file = (path as NSString).standardizingPath
        return file.hasPrefix(base.hasSuffix("/") ? base : base + "/")
    }
}

/// `max_work_bytes`: files that transcode reserve their size in the work folder before they start and wait while
/// others hold the space, so the folder stays within the bound whatever the concurrency.
package final class WorkBudget: Sendable {
    package let limit: Int64
    /// Bytes reserved; a file blocks its worker thread until its size fits (it cannot start without the space).
    private let used = ConditionLock<Int64>(0)

    package init(limit: Int64) { self.limit = limit }

    /// Waits until `bytes` fit; false at once when they never can (more than the whole bound).
    package func reserve(_ bytes: Int64) -> Bool {
        guard bytes <= limit else { return false }
        used.wait(until: { $0 + bytes <= limit }) { $0 += bytes }
        return true
    }

    package func release(_ bytes: Int64) {
        used.change { $0 -= bytes }
    }
}
