#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A failed POSIX call: which call, on what, and the C library's own text for errno (swift-nio's
/// "one helper turns -1/errno into a thrown error naming the call"). The one error type for every system call
/// IngestNative makes, so callers outside it never read `errno` or call `strerror` themselves.
package struct SystemError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The C function that failed (`opendir`, `lstat` …).
    package var call: String
    package var path: String
    package var errno: Int32

    package init(call: String, path: String, errno: Int32) {
        self.call = call
        self.path = path
        self.errno = errno
    }

    /// `strerror` text, lower-cased to read well inside a sentence ("no such file or directory").
    package var reason: String {
        guard let text = strerror(errno) else { return "error \(errno)" }
        return String(cString: text).lowercased()
    }

    /// `strerror` text as the C library spells it ("No such file or directory"), for messages that quote it whole.
    package var message: String { String(cString: strerror(errno)) }

    package var description: String { "\(call)(\(path)): \(reason)" }

    /// The error the C call that just failed on this thread left in `errno`: for code outside IngestNative that
    /// made the call itself and must not read `errno` or call `strerror`.
    package static func last(call: String, path: String) -> SystemError {
        SystemError(call: call, path: path, errno: currentErrno())
    }

    package static let noSuchFile = ENOENT
    package static let permissionDenied = EACCES
    package static let tooManySymlinks = ELOOP
    package static let notADirectory = ENOTDIR
    package static let isADirectory = EISDIR
}

/// `errno` under a name `SystemError`'s own `errno` property does not shadow.
private func currentErrno() -> Int32 { errno }

/// Removing and renaming files, each failure a `SystemError`: the only place outside the wrappers that
/// calls `unlink(2)` and `rename(2)`.
package enum FileSystem {
    /// `unlink(2)`: removes the file (or symlink) at `path`.
    package static func remove(_ path: String) throws(SystemError) {
        guard unlink(path) == 0 else { throw SystemError(call: "unlink", path: path, errno: errno) }
    }

    /// `rename(2)`: moves `source` over `destination` (atomic on one file system); a failure names `destination`.
    package static func rename(_ source: String, to destination: String) throws(SystemError) {
        guard systemRename(source, destination) == 0 else {
            throw SystemError(call: "rename", path: destination, errno: errno)
        }
    }

    /// `fsync(2)` on a folder, so a rename into it survives a crash; best effort (a folder that cannot be opened
    /// is left as it is, like the file systems that cannot sync one).
    package static func syncFolder(_ path: String) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = fsync(descriptor)
        close(descriptor)
    }
}

/// `rename(2)`, under a name `FileSystem.rename` does not shadow.
private func systemRename(_ source: String, _ destination: String) -> Int32 { rename(source, destination) }

/// What `lstat`/`stat` says of one path, as Swift values.
package struct FileStatus: Equatable, Sendable {
    package enum Kind: Sendable, Equatable { case regular, directory, symlink, other }

    package var kind: Kind
    /// What the file is, for messages: "a folder", "a FIFO (named pipe)", "a socket" …
    package var kindName: String
    package var size: Int64
    package var device: UInt64
    package var inode: UInt64
    /// Modification time in nanoseconds since 1970.
    package var modified: Int64
    /// Status-change time (ctime) in nanoseconds since 1970: every write, truncation, rename, chmod or new link moves
    /// it, and no user call can set it back (unlike mtime, which `touch -d` restores), so a rewrite in place that
    /// keeps the size and puts the mtime back still shows here.
    package var statusChanged: Int64

    /// `lstat` (the link itself) when `followLinks` is false, `stat` (its target) otherwise.
    package init(path: String, followLinks: Bool) throws(SystemError) {
        var info = stat()
        let result = followLinks ? stat(path, &info) : lstat(path, &info)
        guard result == 0 else { throw SystemError(call: followLinks ? "stat" : "lstat", path: path, errno: errno) }
        self.init(info)
    }

    /// A regular file's status as recorded rather than read (a journal row's size, mtime and inode); its device and
    /// ctime unknown (0).
    package init(size: Int64, inode: UInt64, modified: Int64) {
        kind = .regular
        kindName = "a regular file"
        self.size = size
        device = 0
        self.inode = inode
        self.modified = modified
        statusChanged = 0
    }

    /// `fstat` of an open descriptor: the file that descriptor reads, whatever is at its path now.
    package init(descriptor: Int32, path: String) throws(SystemError) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw SystemError(call: "fstat", path: path, errno: errno) }
        self.init(info)
    }

    private init(_ info: stat) {
        switch info.st_mode & S_IFMT {
        case S_IFREG: kind = .regular
        case S_IFDIR: kind = .directory
        case S_IFLNK: kind = .symlink
        default: kind = .other
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: kindName = "a regular file"
        case S_IFDIR: kindName = "a folder"
        case S_IFLNK: kindName = "a symlink"
        case S_IFIFO: kindName = "a FIFO (named pipe)"
        case S_IFSOCK: kindName = "a socket"
        case S_IFCHR: kindName = "a character device"
        case S_IFBLK: kindName = "a block device"
        default: kindName = "not a regular file"
        }
        size = Int64(info.st_size)
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        statusChanged = Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
    }

    /// What tells this file apart from `earlier` (the same path's status when it was validated), most telling first:
    /// another file at the path, a new size, a new mtime, or only a new ctime (rewritten in place, mtime put back);
    /// nil when it is the same file, unchanged as far as its status shows.
    package func change(since earlier: FileStatus) -> String? {
        if device != earlier.device || inode != earlier.inode {
            return "replaced by another file (inode \(earlier.inode) → \(inode), \(earlier.size) → \(size) bytes)"
        }
        if size < earlier.size { return "truncated (\(earlier.size) → \(size) bytes)" }
        if size > earlier.size { return "grew (\(earlier.size) → \(size) bytes)" }
        if modified != earlier.modified { return "rewritten (same size, new modification time)" }
        if statusChanged != earlier.statusChanged {
            return "rewritten in place or its status changed (same size and modification time, new ctime)"
        }
        return nil
    }
}

/// Reads `length` bytes of the file at `path` from `offset` in chunks of at most `chunkSize`, handing each to `body`
/// (one reused buffer, so memory stays bounded). Returns the bytes read — fewer than `length` when the file is
/// shorter — and the status the open descriptor sees after the last read (nil when `fstat` failed), so a caller
/// can tell that the file changed meanwhile. `open`/`pread` failures throw `SystemError`; `body`'s errors are rethrown.
package func readFileSlice(
    path: String, offset: Int64, length: Int64, chunkSize: Int = 256 * 1024,
    _ body: (UnsafeRawBufferPointer) throws -> Void
) throws -> (read: Int64, status: FileStatus?) {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw SystemError(call: "open", path: path, errno: errno) }
    defer { close(fd) }
    let buffer = UnsafeMutableRawPointer.allocate(byteCount: chunkSize, alignment: 16)
    defer { buffer.deallocate() }
    var done: Int64 = 0
    while done < length {
        let got = pread(fd, buffer, Int(min(Int64(chunkSize), length - done)), off_t(offset + done))
        if got < 0 {
            if errno == EINTR { continue }
            throw SystemError(call: "pread", path: path, errno: errno)
        }
        if got == 0 { break }
        FileReadCounter.record(path, got, .hash)
        try body(UnsafeRawBufferPointer(start: buffer, count: got))
        done += Int64(got)
    }
    return (done, try? FileStatus(descriptor: fd, path: path))
}

/// One name read from a directory. `name` is nil when the bytes are not valid UTF-8; `rawName` keeps them so the
/// caller can still say which entry it was.
package struct DirectoryEntry: Sendable {
    package var name: String?
    package var rawName: [UInt8]
    /// `d_type`, when the file system reports it (saves an lstat per entry).
    package var kind: FileStatus.Kind?

    /// The name for messages: the UTF-8 text, or the bytes with invalid ones shown as `\xNN`.
    package var displayName: String {
        if let name { return name }
        var text = ""
        var index = 0
        while index < rawName.count {
            let byte = rawName[index]
            if byte < 0x80 {
                text.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                text += "\\x" + String(byte, radix: 16, uppercase: true)
            }
            index += 1
        }
        return text
    }
}

/// An open directory (`opendir`); `deinit` closes it. Entries come one at a time, so a caller decides how many it
/// holds.
package final class DirectoryStream {
    private let handle: OpaquePointer
    package let path: String

    package init(path: String) throws(SystemError) {
        guard let handle = opendir(path) else { throw SystemError(call: "opendir", path: path, errno: errno) }
        self.handle = handle
        self.path = path
    }

    deinit { closedir(handle) }

    /// The next entry other than `.` and `..`; nil at the end. A read error ends the listing with an error.
    package func next() throws(SystemError) -> DirectoryEntry? {
        while true {
            errno = 0
            guard let entry = readdir(handle) else {
                if errno != 0 { throw SystemError(call: "readdir", path: path, errno: errno) }
                return nil
            }
            let bytes = withUnsafeBytes(of: entry.pointee.d_name) { raw -> [UInt8] in
                let buffer = raw.bindMemory(to: UInt8.self)
                let length = buffer.firstIndex(of: 0) ?? buffer.count
                return Array(buffer[..<length])
            }
            if bytes == [0x2E] || bytes == [0x2E, 0x2E] { continue }
            let kind: FileStatus.Kind?
            switch Int32(entry.pointee.d_type) {
            case Int32(DT_REG): kind = .regular
            case Int32(DT_DIR): kind = .directory
            case Int32(DT_LNK): kind = .symlink
            case Int32(DT_UNKNOWN): kind = nil
            default: kind = .other
            }
            return DirectoryEntry(name: String(validating: bytes, as: UTF8.self), rawName: bytes, kind: kind)
        }
    }

    /// Every remaining entry (one directory's names; the caller sorts them).
    package func readAll() throws(SystemError) -> [DirectoryEntry] {
        var entries: [DirectoryEntry] = []
        while let entry = try next() { entries.append(entry) }
        return entries
    }
}

/// An exclusive advisory lock on a file (`flock(LOCK_EX | LOCK_NB)`), held until `deinit` lets it go. The kernel
/// drops it when the process dies, so a `kill -9` never leaves a stale lock behind.
package final class FileLock {
    private let descriptor: Int32
    package let path: String

    /// Takes the lock, creating the file when needed (unless `create` is false: then a missing file throws
    /// `ENOENT`); throws `EWOULDBLOCK` at once when another process (or another lock of this one) holds it.
    package init(path: String, create: Bool = true) throws(SystemError) {
        let descriptor = open(path, O_RDWR | (create ? O_CREAT : 0) | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw SystemError(call: "open", path: path, errno: errno) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(descriptor)
            throw SystemError(call: "flock", path: path, errno: code)
        }
        self.descriptor = descriptor
        self.path = path
    }

    /// Unlocks before closing: a `flock` belongs to the open file, and a child another thread is starting right now
    /// holds a copy of every descriptor from its fork until its `exec` closes them (`O_CLOEXEC`). Closing alone left
    /// the lock held by that copy, and a run opening the journal again at once was told another run had it (issue
    /// 29 §7: 9,143 of 20,000 relocks refused beside two threads spawning `/bin/true`; none with the unlock).
    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }

    package static let heldElsewhere = EWOULDBLOCK
}
