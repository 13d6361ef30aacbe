import Foundation
import IngestConfig
import IngestCore
import IngestFiles
import NativeSystem

/// The folders `ingest watch` was given and the input rules that say which of their files are inputs: the
/// pipeline's `include`/`exclude`/`max_depth`, the names writers use while copying, and the work folder and journal
/// (never inputs). Entries it makes carry the same root, root index, path and relative path as `InputWalker`'s, so
/// the journal knows a file whichever of the two found it.
struct WatchTree: Sendable {
    struct Root: Sendable {
        /// As given on the command line (the journal's root).
        var given: String
        /// `given` without a trailing slash: what paths are built on.
        var directory: String
        /// Position among the sorted roots, as `InputWalker` numbers them.
        var index: Int
    }

    private struct Identity: Hashable, Sendable {
        var device: UInt64
        var inode: UInt64
    }

    let roots: [Root]
    private let include: [Glob]
    private let exclude: [Glob]
    private let names: [Glob]
    private let maxDepth: Int?
    private let followSymlinks: Bool
    private let ignored: Set<Identity>

    init(paths: [String], spec: InputSpec, ignoredNames: [String], ignoring: [String]) {
        roots = paths.sorted().enumerated().map { index, given in
            Root(
                given: given, directory: given.count > 1 && given.hasSuffix("/") ? String(given.dropLast()) : given,
                index: index)
        }
        include = spec.include.map(Glob.init)
        exclude = spec.exclude.map(Glob.init)
        names = ignoredNames.map(Glob.init)
        maxDepth = spec.maxDepth
        followSymlinks = spec.followSymlinks
        ignored = Set(
            ignoring.compactMap { try? FileStatus(path: $0, followLinks: true) }.map {
                Identity(device: $0.device, inode: $0.inode)
            })
    }

    /// The path of `relativePath` under `root`, spelled as `InputWalker` spells it.
    func path(_ root: Root, _ relativePath: String) -> String {
        if relativePath.isEmpty { return root.directory }
        switch root.directory {
        case ".": return relativePath
        case "/": return "/" + relativePath
        default: return root.directory + "/" + relativePath
        }
    }

    /// True for a name writers use while copying (`x.part`, `.x`): such a file is never taken, such a folder not
    /// watched.
    func isIgnoredName(_ name: String) -> Bool { names.contains { $0.matches(name) } }

    /// Whether a folder at `relativePath`, `depth` levels below its root, is watched.
    func takesFolder(_ relativePath: String, depth: Int, status: FileStatus?) -> Bool {
        let name = relativePath.split(separator: "/").last.map(String.init) ?? relativePath
        if isIgnoredName(name) || exclude.contains(where: { $0.matches(relativePath) }) { return false }
        if let maxDepth, depth > maxDepth { return false }
        return status.map { !isIgnored($0) } ?? true
    }

    /// Whether the file at `relativePath` is an input (the same rules as `run`, plus the copying names).
    func takesFile(_ relativePath: String) -> Bool {
        let name = relativePath.split(separator: "/").last.map(String.init) ?? relativePath
        if isIgnoredName(name) || exclude.contains(where: { $0.matches(relativePath) }) { return false }
        return include.isEmpty || include.contains { $0.matches(relativePath) }
    }

    /// Whether an entry the startup walk (`InputWalker`, which knows nothing of copying names) found is taken: no
    /// segment of its path is a copying name (a hidden folder is not watched, so neither are its files).
    func takesWalked(_ relativePath: String) -> Bool {
        !relativePath.split(separator: "/").contains { isIgnoredName(String($0)) }
    }

    func isIgnored(_ status: FileStatus) -> Bool {
        !ignored.isEmpty && ignored.contains(Identity(device: status.device, inode: status.inode))
    }

    /// The entry for a regular file, as `InputWalker` makes it.
    func entry(_ root: Root, _ relativePath: String, status: FileStatus) -> InputEntry {
        InputEntry(
            file: ListedFile(
                path: path(root, relativePath), relativePath: relativePath, root: root.given, rootIndex: root.index,
                size: status.size, status: ListedStatus(status)))
    }

    /// Walks the folder `relativePath` of `root` (depth `depth`) and the folders below it that are watched: `folder`
    /// is told of each (its path, relative path and depth) before its files, `file` of each input file in it.
    func scan(
        _ root: Root, _ relativePath: String, depth: Int, folder: (String, String, Int) -> Void,
        file: (InputEntry) -> Void
    ) {
        let directory = path(root, relativePath)
        folder(directory, relativePath, depth)
        guard let listing = try? DirectoryStream(path: directory), let entries = try? listing.readAll() else { return }
        let prefix = relativePath.isEmpty ? "" : relativePath + "/"
        for item in entries {
            guard let name = item.name else { continue }
            let relative = prefix + name
            let itemPath = path(root, relative)
            guard var status = try? FileStatus(path: itemPath, followLinks: false) else { continue }
            if status.kind == .symlink {
                guard followSymlinks, let target = try? FileStatus(path: itemPath, followLinks: true),
                    target.kind == .regular
                else { continue }
                status = target
            }
            switch status.kind {
            case .directory where takesFolder(relative, depth: depth + 1, status: status):
                scan(root, relative, depth: depth + 1, folder: folder, file: file)
            case .regular where takesFile(relative) && !isIgnored(status):
                file(entry(root, relative, status: status))
            default: continue
            }
        }
    }
}
