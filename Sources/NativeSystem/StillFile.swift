#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `read(2)`, under a name the static `StillFile.read` does not shadow.
private func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int { read(fd, buffer, count) }

/// Reading a whole still into memory (TurboJPEG, libavcodec and libheif all want one buffer) and writing a result
/// atomically. Stills are small; videos never come through here.
package enum StillFile {
    /// Why a read was refused before reading.
    package enum ReadRefusal: Error, Hashable, Sendable {
        /// The file is larger than the cap: `size`, `limit`.
        case tooLarge(size: Int, limit: Int)
        /// The file changed size while being read.
        case changedWhileReading(expected: Int, read: Int)
        case notRegularFile
    }

    /// Reads `path` into a `[UInt8]` of exactly its `fstat` size, refusing anything over `limit` bytes before a
    /// byte is allocated (one descriptor, `read` in a loop that retries `EINTR`).
    package static func read(path: String, limit: Int) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 { throw SystemError(call: "open", path: path, errno: errno) }
        defer { close(fd) }
        var info = stat()
        if fstat(fd, &info) != 0 { throw SystemError(call: "fstat", path: path, errno: errno) }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw ReadRefusal.notRegularFile }
        let size = Int(info.st_size)
        guard size <= limit else { throw ReadRefusal.tooLarge(size: size, limit: limit) }
        var failure: Int32 = 0
        var total = 0
        let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            while total < size, let base = buffer.baseAddress {
                let count = systemRead(fd, base + total, size - total)
                if count < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    break
                }
                if count == 0 { break }
                total += count
            }
            initialized = total
        }
        if failure != 0 { throw SystemError(call: "read", path: path, errno: failure) }
        if total != size { throw ReadRefusal.changedWhileReading(expected: size, read: total) }
        // One more byte would mean the file grew after fstat: what was read is not the whole file.
        var probe: UInt8 = 0
        if systemRead(fd, &probe, 1) > 0 { throw ReadRefusal.changedWhileReading(expected: size, read: size + 1) }
        return bytes
    }

    /// Writes `chunks` to a new temp file next to `path` (a `TemporaryOutputFile`), `fsync`s it, renames it over
    /// `path` and `fsync`s the directory: readers see the old file or the whole new one, never a part. On any
    /// failure the temp file is removed and `path` is untouched.
    package static func writeAtomically(_ chunks: [[UInt8]], to path: String) throws {
        let file = try TemporaryOutputFile(finalPath: path)
        try file.write(chunks)
        try file.commit()
    }

    /// `mkdir -p`: creates `path` and its missing parents (mode 0755).
    package static func makeDirectories(_ path: String) throws {
        var current = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            current += "/" + component
            if mkdir(current, 0o755) != 0 && errno != EEXIST {
                throw SystemError(call: "mkdir", path: current, errno: errno)
            }
        }
    }
}
