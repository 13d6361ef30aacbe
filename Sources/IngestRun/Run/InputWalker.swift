import Foundation
import IngestConfig
import IngestCore
import IngestFiles
import NativeSystem

/// One input the walker found: a regular file to run the stages on, or a problem with an entry that is reported as
/// a failed file of its own (a name that is not UTF-8, a symlink loop, a folder that cannot be read) so the rest of
/// the batch goes on.
package struct InputEntry: Sendable, Equatable {
    /// The file as listed (path, relative path, root, size, `stat`): its `Item` and journal row refer to it.
    package var file: ListedFile
    /// Set when the entry cannot be worked on.
    package var problem: RuleFailure?
    /// Set when the entry is no file to work on (a FIFO, socket or device): reported as skipped with this reason.
    package var skipReason: String?

    /// The path as opened: the root joined with `relativePath`.
    package var path: String { file.path }
    /// The path relative to the root it was found under; what reports show next to the root.
    package var relativePath: String { file.relativePath }
    /// Size when listed.
    package var size: Int64 { file.size }
    /// The file or folder given on the command line that this entry was found under (the journal keys files by
    /// root and relative path).
    package var root: String { file.root }
    /// The position of `root` among the walked roots (sorted, so the same on every run): two roots holding the
    /// same relative path, or one root given twice, still make distinct entries.
    package var rootIndex: Int { file.rootIndex }
    /// What the walker's own `stat` saw (size, mtime, inode): the journal's identity check reuses it instead of
    /// asking again for every file.
    var status: FileStatus? { file.status.map(FileStatus.init) }

    package init(file: ListedFile, problem: RuleFailure? = nil) {
        self.file = file
        self.problem = problem
    }

    package init(
        path: String, relativePath: String, size: Int64, problem: RuleFailure? = nil, root: String = "",
        rootIndex: Int = 0
    ) {
        self.init(
            file: ListedFile(path: path, relativePath: relativePath, root: root, rootIndex: rootIndex, size: size),
            problem: problem)
    }
}

/// Walks the given files and folders lazily, depth first, each folder's entries in byte order, so the order is the
/// same on every run and machine while only the folders on the current path are held in memory (one folder's
/// names at a time, never the whole tree). Symlinks are skipped unless `follow_symlinks` is set; then a link back
/// to a folder on the current path is reported as a loop instead of followed forever.
package final class InputWalker: Sequence, IteratorProtocol {
    private struct Frame {
        var directory: String
        var relativePrefix: String
        var depth: Int
        var entries: [DirectoryEntry]
        var index = 0
        var identity: FolderIdentity
    }

    private struct FolderIdentity: Hashable {
        var device: UInt64
        var inode: UInt64
    }

    private let spec: InputSpec
    private let include: [Glob]
    private let exclude: [Glob]
    private var pendingRoots: [String]
    private var stack: [Frame] = []
    private var ancestors: Set<FolderIdentity> = []
    /// The root being walked: every entry until the stack empties belongs to it.
    private var currentRoot = ""
    /// Its position among the roots (sorted); -1 before the first.
    private var currentRootIndex = -1
    /// Files and folders that are never inputs (the work folder, the journal's files), by device and inode.
    private let ignored: Set<FolderIdentity>
    /// A cancelled run ends the walk: a tree where few entries match can take long between two files.
    private let cancellation: RunCancellation?

    /// `paths` are files or folders, as given on the command line; they are taken in sorted order. Nothing at or
    /// under a path of `ignoring` (the work folder, the journal and its side files) is listed, however it is
    /// reached: they are known by device and inode, so `./.ingest`, an absolute path or a symlink are all one.
    /// Once `cancellation` is cancelled the walk ends (`next()` returns nil) at the next entry. `inGivenOrder`
    /// takes the paths as given instead (`ingest probe c a b` answers in that order; a run sorts them so a root
    /// keeps its position, which names its work folder, whatever order the command line gives).
    package init(
        paths: [String], spec: InputSpec, ignoring: [String] = [], cancellation: RunCancellation? = nil,
        inGivenOrder: Bool = false
    ) {
        self.spec = spec
        ignored = Set(
            ignoring.compactMap { try? FileStatus(path: $0, followLinks: true) }.map {
                FolderIdentity(device: $0.device, inode: $0.inode)
            })
        include = spec.include.map(Glob.init)
        exclude = spec.exclude.map(Glob.init)
        pendingRoots = inGivenOrder ? paths.reversed() : paths.sorted().reversed()
        self.cancellation = cancellation
    }

    package func next() -> InputEntry? {
        while true {
            if cancellation?.isCancelled == true { return nil }
            if stack.isEmpty {
                guard let root = pendingRoots.popLast() else { return nil }
                if let entry = start(root: root) { return entry }
                continue
            }
            let top = stack.count - 1
            guard stack[top].index < stack[top].entries.count else {
                ancestors.remove(stack[top].identity)
                stack.removeLast()
                continue
            }
            let entry = stack[top].entries[stack[top].index]
            stack[top].index += 1
            if let found = visit(entry, in: stack[top]) { return found }
        }
    }

    /// A root given on the command line: a file is taken as it is (globs do not filter what was named explicitly),
    /// a folder is walked. A root that is a symlink is always followed: the user named it.
    private func start(root: String) -> InputEntry? {
        currentRoot = root
        currentRootIndex += 1
        let status: FileStatus
        do {
            status = try FileStatus(path: root, followLinks: true)
        } catch {
            if error.errno == SystemError.tooManySymlinks {
                return problem(
                    path: root, relativePath: root, rule: .symlinkLoop,
                    "symlink loop: the link leads back to itself (\(error.reason)); not followed")
            }
            return problem(path: root, relativePath: root, rule: .unreadable, "cannot open: \(error.reason)")
        }
        if isIgnored(root: root) { return nil }
        switch status.kind {
        case .regular:
            let name = root.split(separator: "/").last.map(String.init) ?? root
            return InputEntry(
                file: ListedFile(
                    path: root, relativePath: name, root: root, rootIndex: currentRootIndex, size: status.size,
                    status: ListedStatus(status)))
        case .directory:
            let directory = root.count > 1 && root.hasSuffix("/") ? String(root.dropLast()) : root
            return push(directory: directory, relativePrefix: "", depth: 0, status: status)
        default:
            return skipped(path: root, relativePath: root, status: status)
        }
    }

    private func push(directory: String, relativePrefix: String, depth: Int, status: FileStatus) -> InputEntry? {
        let identity = FolderIdentity(device: status.device, inode: status.inode)
        let shown = relativePrefix.isEmpty ? directory : String(relativePrefix.dropLast())
        if ancestors.contains(identity) {
            return problem(
                path: directory, relativePath: shown, rule: .symlinkLoop,
                "symlink loop: this folder is also one of its own parent folders; not followed")
        }
        let entries: [DirectoryEntry]
        do {
            let stream = try DirectoryStream(path: directory)
            entries = try stream.readAll().sorted { $0.rawName.lexicographicallyPrecedes($1.rawName) }
        } catch {
            return problem(
                path: directory, relativePath: shown, rule: .unreadable, "cannot list folder: \(error.reason)")
        }
        ancestors.insert(identity)
        stack.append(
            Frame(
                directory: directory, relativePrefix: relativePrefix, depth: depth, entries: entries, identity: identity
            ))
        return nil
    }

    private func visit(_ entry: DirectoryEntry, in frame: Frame) -> InputEntry? {
        let name = entry.displayName
        let relativePath = frame.relativePrefix + name
        let path: String
        switch frame.directory {
        case ".": path = name
        case "/": path = "/" + name
        default: path = frame.directory + "/" + name
        }
        if exclude.contains(where: { $0.matches(relativePath) }) { return nil }
        guard entry.name != nil else {
            guard isIncluded(relativePath) else { return nil }
            return problem(
                path: path, relativePath: relativePath, rule: .fileName,
                "the file name is not valid UTF-8; rename it to work on it")
        }
        var kind = entry.kind
        var status: FileStatus?
        if kind == nil || kind == .symlink {
            do {
                let linkStatus = try FileStatus(path: path, followLinks: false)
                status = linkStatus
                kind = linkStatus.kind
            } catch {
                // Vanished since the listing: nothing to report on.
                return nil
            }
        }
        if kind == .symlink {
            guard spec.followSymlinks else { return nil }
            do {
                let target = try FileStatus(path: path, followLinks: true)
                status = target
                kind = target.kind
            } catch {
                guard isIncluded(relativePath) else { return nil }
                let reason =
                    error.errno == SystemError.tooManySymlinks
                    ? "symlink loop: the link resolves to itself" : "broken symlink: \(error.reason)"
                return problem(path: path, relativePath: relativePath, rule: .symlinkLoop, reason)
            }
        }
        return found(kind: kind, status: status, path: path, relativePath: relativePath, depth: frame.depth)
    }

    /// What the walk makes of a listed name once its kind is known (a symlink's that of its target): a folder to
    /// descend into, a file to work on, or a special file skipped; nil for what is not an input.
    private func found(
        kind: FileStatus.Kind?, status: FileStatus?, path: String, relativePath: String, depth: Int
    ) -> InputEntry? {
        switch kind {
        case .directory:
            if let maxDepth = spec.maxDepth, depth + 1 > maxDepth { return nil }
            let folderStatus: FileStatus
            if let status, status.kind == .directory {
                folderStatus = status
            } else {
                guard let fresh = try? FileStatus(path: path, followLinks: true) else { return nil }
                folderStatus = fresh
            }
            if isIgnored(folderStatus) { return nil }
            return push(directory: path, relativePrefix: relativePath + "/", depth: depth + 1, status: folderStatus)
        case .regular:
            guard isIncluded(relativePath) else { return nil }
            let fileStatus = status ?? (try? FileStatus(path: path, followLinks: true))
            if let fileStatus, isIgnored(fileStatus) { return nil }
            return InputEntry(
                file: ListedFile(
                    path: path, relativePath: relativePath, root: currentRoot, rootIndex: currentRootIndex,
                    size: fileStatus?.size ?? 0, status: fileStatus.map(ListedStatus.init)))
        default:
            guard isIncluded(relativePath) else { return nil }
            let special = status ?? (try? FileStatus(path: path, followLinks: true))
            return skipped(path: path, relativePath: relativePath, status: special)
        }
    }

    private func isIgnored(_ status: FileStatus) -> Bool {
        !ignored.isEmpty && ignored.contains(FolderIdentity(device: status.device, inode: status.inode))
    }

    /// True when the root, or a folder it lies in, is ignored (a root given inside the work folder).
    private func isIgnored(root: String) -> Bool {
        guard !ignored.isEmpty else { return false }
        var path = root.hasPrefix("/") ? root : FileManager.default.currentDirectoryPath + "/" + root
        path = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        while true {
            if let status = try? FileStatus(path: path, followLinks: true), isIgnored(status) { return true }
            let parent = (path as NSString).deletingLastPathComponent
            if parent == path || parent.isEmpty { return false }
            path = parent
        }
    }

    private func isIncluded(_ relativePath: String) -> Bool {
        include.isEmpty || include.contains { $0.matches(relativePath) }
    }

    /// FIFOs, sockets and devices are no files to work on (opening one could block forever or read without end):
    /// skipped, saying why, like any other file the run leaves alone.
    private func skipped(path: String, relativePath: String, status: FileStatus?) -> InputEntry {
        var entry = InputEntry(
            path: path, relativePath: relativePath, size: 0, root: currentRoot, rootIndex: currentRootIndex)
        entry.skipReason = "not a regular file: \(status?.kindName ?? "a FIFO, socket or device")"
        return entry
    }

    private func problem(path: String, relativePath: String, rule: RuleName, _ message: String) -> InputEntry {
        InputEntry(
            path: path, relativePath: relativePath, size: 0,
            problem: RuleFailure(stage: "input", rule: rule, message: message), root: currentRoot,
            rootIndex: currentRootIndex)
    }
}
