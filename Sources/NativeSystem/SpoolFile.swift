#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A temp file only this process reads back (mode 0600, made new with `O_EXCL`, removed on deinit): text held
/// until a report can be written in order. Every failure is a `SystemError` with the C library's text.
package final class SpoolFile {
    private let descriptor: Int32
    package let path: String
    private var end: Int64 = 0

    /// Creates `path`, which must not exist.
    package init(path: String) throws(SystemError) {
        let descriptor = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw SystemError(call: "open", path: path, errno: errno) }
        self.descriptor = descriptor
        self.path = path
    }

    deinit {
        close(descriptor)
        unlink(path)
    }

    /// Writes `bytes` after everything appended so far.
    package func append(_ bytes: [UInt8]) throws(SystemError) {
        var done = 0
        while done < bytes.count {
            let wrote = bytes.withUnsafeBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                return pwrite(descriptor, base + done, bytes.count - done, off_t(end + Int64(done)))
            }
            if wrote < 0, errno == EINTR { continue }
            guard wrote > 0 else { throw SystemError(call: "pwrite", path: path, errno: errno) }
            done += wrote
        }
        end += Int64(done)
    }

    /// Up to `count` bytes from `offset` (fewer at the end).
    package func read(at offset: Int64, count: Int) throws(SystemError) -> [UInt8] {
        try readFully(descriptor, path: path, at: offset, count: count)
    }

    /// Hands everything appended to `body`, `chunk` bytes at a time.
    package func forEachChunk(of chunk: Int = 256 * 1024, _ body: ([UInt8]) throws -> Void) throws {
        var offset: Int64 = 0
        while offset < end {
            let bytes = try read(at: offset, count: Int(min(Int64(chunk), end - offset)))
            guard !bytes.isEmpty else { break }
            try body(bytes)
            offset += Int64(bytes.count)
        }
    }
}
