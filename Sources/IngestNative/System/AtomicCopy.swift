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
        var after = stat()
        guard fstat(input, &after) == 0 else { throw .system(SystemError(call: "fstat", path: source, errno: errno)) }
        if after.st_size != before.st_size || total != Int64(before.st_size) {
            throw .changed("size \(before.st_size) → \(after.st_size) bytes")
        }
        if after.st_mtim.tv_sec != before.st_mtim.tv_sec || after.st_mtim.tv_nsec != before.st_mtim.tv_nsec {
            throw .changed("modification time changed")
        }
        guard fsync(output) == 0 else { throw .system(SystemError(call: "fsync", path: temporary, errno: errno)) }
        if !replace, access(destination, F_OK) == 0 { throw .exists(destination) }
        guard rename(temporary, destination) == 0 else {
            throw .system(SystemError(call: "rename", path: destination, errno: errno))
        }
        keep = true
        let directory = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
        return total
    }

    /// `realpath(3)`: the path with every symlink resolved, or nil when it does not exist.
    package static func resolved(_ path: String) -> String? {
        guard let pointer = realpath(path, nil) else { return nil }
        defer { free(pointer) }
        return String(cString: pointer)
    }
}
