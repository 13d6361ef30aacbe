import NativeSystem

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A request body that is never held whole: head bytes, then optionally a file read in chunks, then tail bytes
/// (a multipart form is head = fields + the file part's headers, tail = the closing boundary). Its length is
/// known up front, so it goes out with an exact Content-Length.
package struct HTTPBody: Sendable {
    package struct FileSlice: Sendable {
        package var path: String
        /// Size and modification time (ns since 1970) the file must still have when its last byte is read: a file
        /// that changes while it is sent fails the transfer instead of arriving torn.
        package var size: Int64
        package var modified: Int64
        /// Where the slice starts in the file (an S3 multipart part); 0 for the whole file.
        package var offset: Int64 = 0
        /// The whole file's size when the slice was taken (checked, with `modified`, after the slice's last byte);
        /// nil means `offset + size`.
        package var fileSize: Int64?
        /// The file as it was validated (device, inode, size, mtime, ctime): the open descriptor must show exactly
        /// this when it is opened — before a byte is sent — and after the slice's last byte is read, so the bytes
        /// sent are those of the file that was checked, not of one renamed over it, truncated or rewritten since.
        /// Nil checks only `size` and `modified` at the end.
        package var identity: FileStatus?
        package init(path: String, size: Int64, modified: Int64) {
            self.path = path
            self.size = size
            self.modified = modified
        }

        /// The whole file as `status` describes it, which it must still be while it is sent.
        package init(path: String, status: FileStatus) {
            self.init(path: path, size: status.size, modified: status.modified)
            identity = status
        }

        /// `length` bytes from `offset` of a file whose whole size and mtime were `fileSize` and `modified`.
        package init(path: String, offset: Int64, length: Int64, fileSize: Int64, modified: Int64) {
            self.path = path
            self.size = length
            self.modified = modified
            self.offset = offset
            self.fileSize = fileSize
        }
    }

    package var head: [UInt8]
    package var file: FileSlice?
    package var tail: [UInt8]

    package init(head: [UInt8] = [], file: FileSlice? = nil, tail: [UInt8] = []) {
        self.head = head
        self.file = file
        self.tail = tail
    }

    package static func bytes(_ bytes: [UInt8]) -> HTTPBody { HTTPBody(head: bytes) }

    /// The file as it is now (its size and mtime become the ones it must keep).
    package static func file(_ path: String, head: [UInt8] = [], tail: [UInt8] = []) throws(SystemError) -> HTTPBody {
        let status = try FileStatus(path: path, followLinks: true)
        return HTTPBody(
            head: head, file: FileSlice(path: path, size: status.size, modified: status.modified), tail: tail)
    }

    package var length: Int64 { Int64(head.count) + (file?.size ?? 0) + Int64(tail.count) }
}

/// Sees the file's bytes as they are sent (hashing while streaming), and is told when the body restarts: the
/// observer every byte pump takes (`NativeSystem`'s `ByteStreamObserver`), under the name upload code knows.
package typealias HTTPBodyObserver = ByteStreamObserver

/// Why a body could not be produced; the transfer fails with this instead of a bare "read error".
package enum HTTPBodyProblem: Error, Equatable, Sendable, CustomStringConvertible {
    case unreadable(SystemError)
    case changed(String)
    /// Found on opening it, before any byte went out: it is not the file that was validated.
    case changedBeforeSending(String)

    package var description: String {
        switch self {
        case .unreadable(let error): return "cannot read the file to send: \(error)"
        case .changed(let what): return "the file changed while it was being sent (\(what)); nothing torn was kept"
        case .changedBeforeSending(let what):
            return "the file changed since it was validated (\(what)); nothing of it was sent"
        }
    }
}

/// Serves an `HTTPBody` to curl's read callback from an open descriptor; `seek(to:)` serves curl's seek callback
/// so a retried or redirected request restarts at byte 0.
final class HTTPBodyReader {
    let body: HTTPBody
    private var descriptor: Int32 = -1
    private(set) var position: Int64 = 0
    private(set) var problem: HTTPBodyProblem?
    weak var observer: HTTPBodyObserver?

    init(body: HTTPBody) throws(HTTPBodyProblem) {
        self.body = body
        if let file = body.file {
            let fd = open(file.path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw .unreadable(SystemError(call: "open", path: file.path, errno: errno)) }
            if let identity = file.identity {
                // Checked on the descriptor itself: what is read below is this very file, whatever the path says later.
                let now: FileStatus
                do {
                    now = try FileStatus(descriptor: fd, path: file.path)
                } catch {
                    close(fd)
                    throw .unreadable(error)
                }
                if let change = now.change(since: identity) {
                    close(fd)
                    throw .changedBeforeSending(change)
                }
            }
            descriptor = fd
            posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL)
        }
    }

    deinit { if descriptor >= 0 { close(descriptor) } }

    func seek(to offset: Int64) -> Bool {
        guard offset >= 0, offset <= body.length else { return false }
        position = offset
        if offset == 0 { observer?.restart() }
        return true
    }

    /// Fills up to `capacity` bytes; 0 at the end; nil when the body cannot be produced (see `problem`).
    func read(into buffer: UnsafeMutableRawPointer, capacity: Int) -> Int? {
        var written = 0
        while written < capacity, position < body.length {
            let headCount = Int64(body.head.count)
            let fileSize = body.file?.size ?? 0
            let room = capacity - written
            if position < headCount {
                let start = Int(position)
                let count = min(room, body.head.count - start)
                body.head.withUnsafeBytes { raw in
                    (buffer + written).copyMemory(from: raw.baseAddress! + start, byteCount: count)
                }
                written += count
                position += Int64(count)
            } else if position < headCount + fileSize, let file = body.file {
                let offset = position - headCount
                let available = Int(min(Int64(room), fileSize - offset))
                let wanted = Self.alignedLength(
                    available, into: buffer + written, from: file.offset + offset, nextCallInto: buffer)
                let got = pread(descriptor, buffer + written, wanted, off_t(file.offset + offset))
                if got < 0 {
                    if errno == EINTR { continue }
                    problem = .unreadable(SystemError(call: "pread", path: file.path, errno: errno))
                    return nil
                }
                if got == 0 {
                    problem = .changed("it shrank below \(fileSize) bytes")
                    return nil
                }
                FileReadCounter.record(file.path, got, .send)
                observer?.consume(UnsafeRawBufferPointer(start: buffer + written, count: got))
                written += got
                position += Int64(got)
                if position == headCount + fileSize, let change = changeSinceStart(file) {
                    problem = .changed(change)
                    return nil
                }
                if wanted < available { break }  // cut short to align the next call's read: curl sends this much
            } else {
                let start = Int(position - headCount - fileSize)
                let count = min(room, body.tail.count - start)
                body.tail.withUnsafeBytes { raw in
                    (buffer + written).copyMemory(from: raw.baseAddress! + start, byteCount: count)
                }
                written += count
                position += Int64(count)
            }
        }
        return written
    }

    /// How many of `wanted` bytes to read now from file offset `offset` into `destination`, so that the reads of the
    /// calls after this one (into `buffer`, curl's upload buffer, which it passes again each time) are mutually
    /// aligned: the buffer's and the file offset's positions within a 4 KiB page are equal.
    ///
    /// Why: the kernel copies a `pread` from the page cache with `rep movsb`, which on AMD Zen is three to four times
    /// slower when the destination sits 1-31 bytes past the source modulo 4 KiB. curl's 256 KiB upload buffer is
    /// glibc-mmapped at 16 bytes into a page, and the file offsets step by 256 KiB from 0, so every read of a PUT
    /// landed 16 bytes "ahead": measured on this machine, `_copy_to_iter` took 54 % of a 2 GiB PUT's samples against
    /// 22 % in `curl -T` (whose 64 KiB buffer happens to sit 64 bytes before the source), and a bare 2 GiB `pread`
    /// loop took 6.3 s with the buffer 16 bytes into a page against 1.5 s page-aligned. One shorter read (this one)
    /// brings the file offset in step with the buffer; with a 256 KiB capacity every later read stays in step.
    static func alignedLength(
        _ wanted: Int, into destination: UnsafeMutableRawPointer, from offset: Int64,
        nextCallInto buffer: UnsafeMutableRawPointer
    ) -> Int {
        let page = 4096
        let skew = (Int(bitPattern: destination) &- Int(truncatingIfNeeded: offset)) & (page - 1)
        guard skew != 0 else { return wanted }
        // The next call starts at `buffer` and at file offset `offset + length`: in step when the length is
        // congruent to (buffer - offset) modulo a page. The longest such length up to `wanted`, if there is one.
        let step = (Int(bitPattern: buffer) &- Int(truncatingIfNeeded: offset)) & (page - 1)
        guard wanted > step else { return wanted }
        let length = wanted - ((wanted - step) & (page - 1))
        return length > 0 ? length : wanted
    }

    /// Checked when the file's last byte has been read, before it is handed to curl.
    private func changeSinceStart(_ file: HTTPBody.FileSlice) -> String? {
        if let identity = file.identity {
            guard let now = try? FileStatus(descriptor: descriptor, path: file.path) else { return "fstat failed" }
            return now.change(since: identity)
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return "fstat failed" }
        let size = Int64(info.st_size)
        let modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        let expected = file.fileSize ?? file.offset + file.size
        if size != expected { return "size \(expected) → \(size) bytes" }
        if modified != file.modified { return "modification time changed" }
        return nil
    }
}
