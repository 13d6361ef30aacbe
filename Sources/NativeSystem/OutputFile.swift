#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A file that a report is written to, opened the way its path asks:
/// - `/dev/fd/N`, `/proc/self/fd/N`, `/dev/stdout`, `/dev/stderr` (a shell's `>(cat)` too) write to that open
///   descriptor (a duplicate of it), sharing its offset as a shell redirection would;
/// - a character device or a FIFO (`/dev/null`, a named pipe) is opened and written directly;
/// - anything else is a regular file, written to a temp file beside it (mode 0600: a report may hold a server's
///   answers) that `commit()` fsyncs and renames over it, so a crash never leaves half a report behind.
/// A symlink is followed first, link by link, so the file it points to is replaced, in that file's folder, and the
/// link itself stays a link (`/dev/stdout` is never replaced by a regular file).
package final class OutputFile {
    /// The path as given, for messages.
    package let path: String
    /// True when writes go straight to a descriptor, device or FIFO (nothing to rename at the end).
    package var isDirect: Bool { temporary == nil }
    /// N when the path named an open descriptor (`/dev/fd/N`, `/dev/stdout` …), which this writes a duplicate of.
    package let duplicated: Int32?
    private let descriptor: Int32
    private let temporary: String?
    private let target: String?
    private var finished = false

    /// `appending`: a regular file is opened for appending and written in place (`ingest watch`'s JSON Lines, read
    /// while the watch goes on), not through a temp file.
    package init(path: String, mode: mode_t = 0o600, appending: Bool = false) throws(SystemError) {
        self.path = path
        switch try OutputFile.destination(of: path) {
        case .file(let file) where appending:
            let opened = open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, mode)
            guard opened >= 0 else { throw SystemError(call: "open", path: file, errno: errno) }
            (descriptor, temporary, target, duplicated) = (opened, nil, nil, nil)
        case .descriptor(let number):
            let copy = fcntl(number, F_DUPFD_CLOEXEC, 3)
            guard copy >= 0 else { throw SystemError(call: "dup", path: path, errno: errno) }
            (descriptor, temporary, target, duplicated) = (copy, nil, nil, number)
        case .device(let device):
            let opened = open(device, O_WRONLY | O_CLOEXEC | O_NOCTTY)
            guard opened >= 0 else { throw SystemError(call: "open", path: device, errno: errno) }
            (descriptor, temporary, target, duplicated) = (opened, nil, nil, nil)
        case .file(let file):
            let folder = file.lastIndex(of: "/").map { file[..<$0].isEmpty ? "/" : String(file[..<$0]) } ?? "."
            let name = file.lastIndex(of: "/").map { String(file[file.index(after: $0)...]) } ?? file
            var template = Array("\(folder == "/" ? "" : folder)/.\(name).XXXXXX".utf8CString)
            let opened = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
            guard opened >= 0 else { throw SystemError(call: "mkstemp", path: file, errno: errno) }
            _ = fcntl(opened, F_SETFD, FD_CLOEXEC)
            fchmod(opened, mode)
            let temporaryPath = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            (descriptor, temporary, target, duplicated) = (opened, temporaryPath, file, nil)
        }
    }

    deinit {
        close(descriptor)
        if !finished, let temporary { unlink(temporary) }
    }

    /// Writes all of `bytes` (retrying short writes and EINTR).
    package func write(_ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        var offset = 0
        while offset < bytes.count {
            let wrote = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if wrote < 0 {
                if errno == EINTR { continue }
                throw SystemError(call: "write", path: temporary ?? path, errno: errno)
            }
            offset += wrote
        }
    }

    /// For a regular file: fsync, rename the temp file over the target, fsync its folder. Nothing for the others.
    package func commit() throws(SystemError) {
        guard !finished else { return }
        finished = true
        guard let temporary, let target else { return }
        guard fsync(descriptor) == 0 else {
            let code = errno
            unlink(temporary)
            throw SystemError(call: "fsync", path: temporary, errno: code)
        }
        guard rename(temporary, target) == 0 else {
            let code = errno
            unlink(temporary)
            throw SystemError(call: "rename", path: target, errno: code)
        }
        let folder = target.lastIndex(of: "/").map { target[..<$0].isEmpty ? "/" : String(target[..<$0]) } ?? "."
        FileSystem.syncFolder(folder)
    }

    enum Destination: Equatable {
        case descriptor(Int32)
        case device(String)
        case file(String)
    }

    /// Follows `path` link by link to what a write should go to. A missing final file (or a dangling link's
    /// target) is a new regular file; a folder is an error.
    static func destination(of path: String) throws(SystemError) -> Destination {
        var current = path
        for _ in 0..<40 {
            if let number = descriptorNumber(current) { return .descriptor(number) }
            var info = stat()
            guard lstat(current, &info) == 0 else {
                if errno == ENOENT { return .file(current) }
                throw SystemError(call: "lstat", path: current, errno: errno)
            }
            switch info.st_mode & S_IFMT {
            case S_IFLNK:
                var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
                let length = readlink(current, &buffer, buffer.count - 1)
                guard length >= 0 else { throw SystemError(call: "readlink", path: current, errno: errno) }
                let link = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if link.hasPrefix("/") {
                    current = link
                } else {
                    current = current.lastIndex(of: "/").map { String(current[...$0]) + link } ?? link
                }
            case S_IFREG: return .file(current)
            case S_IFDIR: throw SystemError(call: "open", path: current, errno: EISDIR)
            default: return .device(current)
            }
        }
        throw SystemError(call: "readlink", path: path, errno: ELOOP)
    }

    /// N for `/dev/fd/N`, `/proc/self/fd/N`, `/proc/<our pid>/fd/N`; 1 and 2 for `/dev/stdout`, `/dev/stderr`.
    static func descriptorNumber(_ path: String) -> Int32? {
        switch path {
        case "/dev/stdout": return 1
        case "/dev/stderr": return 2
        default: break
        }
        for prefix in ["/dev/fd/", "/proc/self/fd/", "/proc/\(getpid())/fd/"] where path.hasPrefix(prefix) {
            return Int32(path.dropFirst(prefix.count))
        }
        return nil
    }
}
