import IngestCore
import NativeSystem

/// The model's `ListedStatus` (IngestCore, plain integers) made from and turned back into NativeSystem's
/// `FileStatus`: the lister takes a `stat` here, and the wrappers that pin a file to it (an upload's body, an atomic
/// copy) compare a `FileStatus`.
extension ListedStatus {
    package init(_ status: FileStatus) {
        self.init(
            size: status.size, device: status.device, inode: status.inode, modified: status.modified,
            statusChanged: status.statusChanged)
    }

    /// `stat` of `path` (following links) now.
    package init(path: String) throws(SystemError) {
        self.init(try FileStatus(path: path, followLinks: true))
    }
}

extension FileStatus {
    /// A regular file with the listed identity (what `FileStatus.change(since:)` and the pinned readers compare).
    package init(_ listed: ListedStatus) {
        self.init(size: listed.size, inode: listed.inode, modified: listed.modified)
        device = listed.device
        statusChanged = listed.statusChanged
    }
}

extension ListedFile {
    /// The same file listed again with `status` (its size from it).
    package func relisted(_ status: FileStatus?) -> ListedFile { relisted(status.map(ListedStatus.init)) }

    /// The file with its `stat` taken now when the lister took none (a file the walker could not `stat`, an entry
    /// made by hand), its listed size kept; as it is otherwise.
    package func statted() -> ListedFile {
        guard status == nil else { return self }
        return ListedFile(
            path: path, relativePath: relativePath, root: root, rootIndex: rootIndex, size: size,
            status: try? ListedStatus(path: path))
    }
}

extension Item {
    /// A `changed` failure of `stage` when the file at `path` is no longer the one validated (`found` says when:
    /// "before stage upload"); nil when it is, or when it cannot be looked at (gone: the stage that reads it says
    /// `unreadable`). The hash taken of it is dropped so the journal keeps none of it.
    package func changedFailure(stage: String, found: String) -> RuleFailure? {
        guard let validated, let now = try? FileStatus(path: path, followLinks: true),
            let change = now.change(since: FileStatus(validated))
        else { return nil }
        knownSHA256 = nil
        knownIdentity = nil
        return RuleFailure(
            stage: stage, rule: .changed,
            message: "\(relativePath) changed after it was listed, found \(found): \(change); nothing made of it "
                + "is kept, the next run takes the file as it is then")
    }
}
