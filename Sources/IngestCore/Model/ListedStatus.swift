/// What the lister's `stat` saw of an input file, as plain integers: the identity the journal keys the file by
/// (size, mtime, inode) and what every stage must find again (device and ctime too, `Item.validated`). The model
/// holds this value; the layer that lists files makes it from NativeSystem's `FileStatus` (IngestFiles'
/// `ListedStatus(_:)`), so the model is read and tested without C.
package struct ListedStatus: Equatable, Sendable {
    package var size: Int64
    package var device: UInt64
    package var inode: UInt64
    /// Modification time in nanoseconds since 1970.
    package var modified: Int64
    /// Status-change time (ctime) in nanoseconds since 1970: every write, truncation, rename, chmod or new link moves
    /// it, and no user call can set it back, so a rewrite in place that puts the mtime back still shows here.
    package var statusChanged: Int64

    package init(size: Int64, device: UInt64, inode: UInt64, modified: Int64, statusChanged: Int64) {
        self.size = size
        self.device = device
        self.inode = inode
        self.modified = modified
        self.statusChanged = statusChanged
    }

    /// A file's status as recorded rather than read (a journal row's size, mtime and inode); its device and ctime
    /// unknown (0).
    package init(size: Int64, inode: UInt64, modified: Int64) {
        self.init(size: size, device: 0, inode: inode, modified: modified, statusChanged: 0)
    }
}
