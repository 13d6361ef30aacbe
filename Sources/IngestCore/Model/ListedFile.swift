/// One input file as the run listed it: where it is (the path as opened, the path relative to the input root it was
/// found under, that root) and what it was then (its size and `stat`). Made once, where the input is listed
/// (`InputWalker`, `ingest watch`); the file's entry, its `Item` and its journal row refer to this value instead of
/// copying its fields.
package struct ListedFile: Sendable, Equatable {
    /// The path as opened: the root joined with `relativePath`.
    package let path: String
    /// The path relative to the root it was found under (what reports and `file.path` show).
    package let relativePath: String
    /// The input root (a file or folder given on the command line) it was found under; empty when not walked.
    package let root: String
    /// The position of `root` among the inputs of the run (0 for the first, in the walker's order); with the
    /// relative path it tells every file of a run apart, even when two roots hold the same relative path or one root
    /// is given twice.
    package let rootIndex: Int
    /// Size in bytes when listed.
    package let size: Int64
    /// What the lister's `stat` saw (device, inode, size, mtime, ctime): the identity the journal keys the file by,
    /// and what every stage must find (`Item.validated`); nil when none was taken.
    package let status: ListedStatus?

    package init(
        path: String, relativePath: String, root: String = "", rootIndex: Int = 0, size: Int64,
        status: ListedStatus? = nil
    ) {
        self.path = path
        self.relativePath = relativePath
        self.root = root
        self.rootIndex = rootIndex
        self.size = size
        self.status = status
    }

    /// The file as reports see it: the cached `stat` does not count.
    package static func == (left: ListedFile, right: ListedFile) -> Bool {
        left.path == right.path && left.relativePath == right.relativePath && left.root == right.root
            && left.rootIndex == right.rootIndex && left.size == right.size
    }

    /// The same file listed again with `status` (its size from it).
    package func relisted(_ status: ListedStatus?) -> ListedFile {
        ListedFile(
            path: path, relativePath: relativePath, root: root, rootIndex: rootIndex, size: status?.size ?? size,
            status: status)
    }
}
