#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `write(2)`, under a name `TemporaryOutputFile.write` does not shadow.
private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int { write(fd, buffer, count) }

/// A new file that appears at its final path only when complete: it is made as a hidden temp file beside the
/// final path (`mkstemps`, so two runs never share one), and `commit()` `fsync`s it, renames it into place and
/// `fsync`s the directory. Until then `deinit` removes it, so a failed or abandoned transcode leaves nothing.
package final class TemporaryOutputFile {
    package let finalPath: String
    package let temporaryPath: String
    private var committed = false

    package init(finalPath: String) throws {
        self.finalPath = finalPath
        let directory = Self.directory(of: finalPath)
        let name = finalPath.split(separator: "/").last.map(String.init) ?? "output"
        var template = Array("\(directory)/.\(name).XXXXXX.tmp".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { buffer -> Int32 in
            guard let base = buffer.baseAddress else { return -1 }
            return mkstemps(base, 4)
        }
        let path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        if fd < 0 { throw SystemError(call: "mkstemps", path: path, errno: errno) }
        close(fd)
        temporaryPath = path
    }

    deinit { if !committed { unlink(temporaryPath) } }

    /// Writes `chunks` to the temp file, in order (`write` in a loop that retries `EINTR`).
    package func write(_ chunks: [[UInt8]]) throws {
        let fd = open(temporaryPath, O_WRONLY | O_CLOEXEC)
        if fd < 0 { throw SystemError(call: "open", path: temporaryPath, errno: errno) }
        defer { close(fd) }
        for chunk in chunks where !chunk.isEmpty {
            var written = 0
            while written < chunk.count {
                let count = chunk.withUnsafeBufferPointer { buffer -> Int in
                    guard let base = buffer.baseAddress else { return 0 }
                    return systemWrite(fd, base + written, buffer.count - written)
                }
                if count < 0 {
                    if errno == EINTR { continue }
                    throw SystemError(call: "write", path: temporaryPath, errno: errno)
                }
                written += count
            }
        }
    }

    /// Makes the file durable and renames it to `finalPath` (atomic on one file system).
    package func commit() throws {
        let fd = open(temporaryPath, O_RDONLY | O_CLOEXEC)
        if fd < 0 { throw SystemError(call: "open", path: temporaryPath, errno: errno) }
        defer { close(fd) }
        if fchmod(fd, 0o644) != 0 { throw SystemError(call: "fchmod", path: temporaryPath, errno: errno) }
        if fsync(fd) != 0 { throw SystemError(call: "fsync", path: temporaryPath, errno: errno) }
        try FileSystem.rename(temporaryPath, to: finalPath)
        committed = true
        FileSystem.syncFolder(Self.directory(of: finalPath))
    }

    private static func directory(of path: String) -> String {
        let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        return directory.isEmpty ? (path.hasPrefix("/") ? "/" : ".") : directory
    }
}
