import Foundation
import IngestCore
import IngestFiles
import NativeSystem

/// The files seen but not yet taken, each with what was last seen of it and since when. A file is due once its size
/// and modification time have stayed the same for the settle time and no writer on this machine has it open (one
/// wrote to it and has not closed it yet). Only files not yet taken are here: the table is as large as what is
/// landing now, never as large as what has landed.
struct SettleTable {
    /// What the watcher knows of a file's writer.
    enum Writer {
        /// Nothing: found by a scan, or by an event that ends a write (closed, renamed or linked into place).
        case unknown
        /// A writer on this machine has it open (it was created empty, or written to): wait for its close.
        case open
    }

    private struct Pending {
        var entry: InputEntry
        var size: Int64
        var modified: Int64
        /// When size or mtime last changed (or the file was first seen), on the monotonic clock.
        var since: Double
        var writer: Writer
    }

    private var pending: [String: Pending] = [:]

    var count: Int { pending.count }

    func contains(_ path: String) -> Bool { pending[path] != nil }

    /// Notes a file seen now (`status` what `stat` says), by an event or a scan; `writer` is what the event says of
    /// its writer (nil: leave it as it was).
    mutating func note(_ entry: InputEntry, status: FileStatus, writer: Writer?, now: Double) {
        if var known = pending[entry.path] {
            if known.size != status.size || known.modified != status.modified {
                known.size = status.size
                known.modified = status.modified
                known.since = now
            }
            known.entry = entry
            if let writer { known.writer = writer }
            pending[entry.path] = known
        } else {
            pending[entry.path] = Pending(
                entry: entry, size: status.size, modified: status.modified, since: now, writer: writer ?? .unknown)
        }
    }

    mutating func remove(_ path: String) { pending[path] = nil }

    /// Removes every file under `folder` (moved away or deleted).
    mutating func remove(under folder: String) {
        let prefix = folder.hasSuffix("/") ? folder : folder + "/"
        pending = pending.filter { !$0.key.hasPrefix(prefix) }
    }

    /// The files that have settled, taken out of the table. A file unchanged by events for the settle time is
    /// looked at again (`stat`): a change starts its settle time over, a file gone is dropped.
    mutating func takeDue(now: Double, settle: Double, stat: (String) -> FileStatus?) -> [InputEntry] {
        var due: [InputEntry] = []
        for (path, known) in pending where now - known.since >= settle {
            guard let status = stat(path), status.kind == .regular else {
                pending[path] = nil
                continue
            }
            if status.size != known.size || status.modified != known.modified {
                pending[path]?.size = status.size
                pending[path]?.modified = status.modified
                pending[path]?.since = now
                continue
            }
            guard known.writer == .unknown else { continue }
            var entry = known.entry
            entry.file = entry.file.relisted(status)
            due.append(entry)
            pending[path] = nil
        }
        return due.sorted { ($0.rootIndex, $0.relativePath) < ($1.rootIndex, $1.relativePath) }
    }
}
