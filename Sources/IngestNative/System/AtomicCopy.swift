#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Copies a file so that the destination is either absent or complete: the bytes go to a temporary file in the
/// destination's folder, which is fsynced and renamed over the destination, and the folder is fsynced so the
/// rename survives a crash. The source is read in 256 KiB chunks, and a source that changes size or mtime while
/// it is copied fails the copy (the temporary file is removed).
package enum AtomicCopy {
    package enum Failure: Error, Sendable, CustomStringConvertible {
        case system(SystemError)
        case changed(String)
        case exists(String)

        package var description: String {
            switch self {
            case .system(let error): return error.description
            case .changed(let what): return "the file changed while it was being copied (\(what))"
            case .exists(let path): return "\(path) already exists"
            }
        }
    }

    /// Copies `source` to `destination`; returns the bytes copied. `observer` sees every byte (hashing).
    @discardableResult
    package static func copy(
        from source: String, to destination: String, replace: Bool, observer: HTTPBodyObserver? = nil
    ) throws(Failure) -> Int64 {
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw .system(SystemError(call: "open", path: source, errno: errno)) }
        defer { close(input) }
        var before = stat()
        guard fstat(input, &before) == 0 else { throw .system(SystemError(call: "fstat", path: source, errno: errno)) }
        if !replace, access(destination, F_OK) == 0 { throw .exists(destination) }

        let folder = destination.lastIndex(of: "/").map { String(destination[..<$0]) } ?? "."
        var template = Array("\(folder)/.ingest-tmp-XXXXXX".utf8CString)
        let output = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        let temporary = String(cString: template)
        guard output >= 0 else { throw .system(SystemError(call: "mkstemp", path: temporary, errno: errno)) }
        var keep = false
        defer {
            if !keep { unlink(temporary) }
        }
        defer { if output >= 0 { close(output) } }
        fchmod(output, 0o644)

        let total = try pump(from: input, source: source, to: output, temporary: temporary, observer: observer)
        try checkUnchanged(input, before: before, copied: total, source: source)
        guard fsync(output) == 0 else { throw .system(SystemError(call: "fsync", path: temporary, errno: errno)) }
        if !replace, access(destination, F_OK) == 0 { throw .exists(destination) }
        do { try FileSystem.rename(temporary, to: destination) } catch { throw .system(error) }
        keep = true
        FileSystem.syncFolder(folder)
        return total
    }

    /// Reads `input` to its end in 256 KiB chunks, showing each to `observer` and writing it to `output`
    /// (both retried on `EINTR`); returns the bytes copied.
    private static func pump(
        from input: Int32, source: String, to output: Int32, temporary: String, observer: HTTPBodyObserver?
    ) throws(Failure) -> Int64 {
        let chunk = 256 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        var total: Int64 = 0
        observer?.restart()
        while true {
            let got = read(input, buffer, chunk)
            if got < 0 {
                if errno == EINTR { continue }
                throw .system(SystemError(call: "read", path: source, errno: errno))
            }
            if got == 0 { break }
            observer?.consume(UnsafeRawBufferPointer(start: buffer, count: got))
            var offset = 0
            while offset < got {
                let wrote = write(output, buffer + offset, got - offset)
                if wrote < 0 {
                    if errno == EINTR { continue }
                    throw .system(SystemError(call: "write", path: temporary, errno: errno))
                }
                offset += wrote
            }
            total += Int64(got)
        }
        return total
    }

    /// Fails the copy when the source's size or mtime moved while it was read, or fewer bytes came than it had.
    private static func checkUnchanged(
        _ input: Int32, before: stat, copied total: Int64, source: String
    ) throws(Failure) {
        var after = stat()
        guard fstat(input, &after) == 0 else { throw .system(SystemError(call: "fstat", path: source, errno: errno)) }
        if after.st_size != before.st_size || total != Int64(before.st_size) {
            throw .changed("size \(before.st_size) → \(after.st_size) bytes")
        }
        if after.st_mtim.tv_sec != before.st_mtim.tv_sec || after.st_mtim.tv_nsec != before.st_mtim.tv_nsec {
            throw .changed("modification time changed")
        }
    }

    /// `realpath(3)`: the path with every symlink resolved, or nil when it does not exist.
    package static func resolved(_ path: String) -> String? {
        guard let pointer = realpath(path, nil) else { return nil }
        defer { free(pointer) }
        return String(cString: pointer)
    }
}
