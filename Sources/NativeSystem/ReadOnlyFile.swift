#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A file opened read-only (`open`), for a few small reads at known offsets (`pread`); `deinit` closes it. What
/// a walk over box headers needs: no buffering, no `Data`, one descriptor for all the reads.
package final class ReadOnlyFile {
    private let descriptor: Int32
    package let path: String

    /// Opens `path`; throws `SystemError` (`open`) when it cannot.
    package init(path: String) throws(SystemError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw SystemError(call: "open", path: path, errno: errno) }
        self.descriptor = descriptor
        self.path = path
    }

    deinit { close(descriptor) }

    /// Up to `count` bytes from `offset` (fewer at the end of the file); throws `SystemError` (`pread`).
    package func read(at offset: Int64, count: Int) throws(SystemError) -> [UInt8] {
        try readFully(descriptor, path: path, at: offset, count: count)
    }
}

/// Up to `count` bytes of `descriptor` from `offset`, fewer only at the end of the file: `pread` again after a
/// short read or EINTR. The one positional read of `ReadOnlyFile` and `SpoolFile`; `path` names the file in errors.
func readFully(_ descriptor: Int32, path: String, at offset: Int64, count: Int) throws(SystemError) -> [UInt8] {
    guard count > 0 else { return [] }
    var bytes = [UInt8](repeating: 0, count: count)
    var done = 0
    while done < count {
        let got = bytes.withUnsafeMutableBytes { buffer -> Int in
            guard let base = buffer.baseAddress else { return 0 }
            return pread(descriptor, base + done, count - done, off_t(offset + Int64(done)))
        }
        if got < 0, errno == EINTR { continue }
        if got < 0 { throw SystemError(call: "pread", path: path, errno: errno) }
        if got == 0 { break }
        done += got
    }
    return done == count ? bytes : Array(bytes.prefix(done))
}
