#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Copies a file so that the destination is either absent or complete: the bytes go to a temporary file in the
/// destination's folder, which is fsynced and renamed over the destination, and the folder is fsynced so the
/// rename survives a crash. The source is read in 256 KiB chunks, and a source that is not `expected` when opened,
/// or changes (size, mtime, ctime, inode) while it is copied, fails the copy (the temporary file is removed).
package enum AtomicCopy {
    package enum Failure: Error, Sendable, CustomStringConvertible {
        case system(SystemError)
        case changed(String)
        case exists(String)

        package var description: String {
            switch self {
            case .system(let error): return error.description
            case .changed(let what): return "the file changed (\(what))"
            case .exists(let path): return "\(path) already exists"
            }
        }
    }

    /// Copies `source` to `destination`; returns the bytes copied. `observer` sees every byte (hashing).
    /// `expected`: the source as it was validated; the open descriptor must show exactly that.
    @discardableResult
    package static func copy(
        from source: String, to destination: String, replace: Bool, observer: ByteStreamObserver? = nil,
        expected: FileStatus? = nil
    ) throws(Failure) -> Int64 {
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw .system(SystemError(call: "open", path: source, errno: errno)) }
        defer { close(input) }
        let before: FileStatus
        do { before = try FileStatus(descriptor: input, path: source) } catch { throw .system(error) }
        if let expected, let change = before.change(since: expected) {
            throw .changed(change + " since it was validated; nothing of it was copied")
        }
        if !replace, access(destination, F_OK) == 0 { throw .exists(destination) }

        let folder = destination.lastIndex(of: "/").map { String(destination[..<$0]) } ?? "."
        var template = Array("\(folder)/.ingest-tmp-XXXXXX".utf8CString)
        let output = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
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
        if !replace {
            // Put in place without replacing a name taken meanwhile (no check-then-rename race).
            switch FileMove.renameWithoutReplacing(temporary, destination) {
            case 0: break
            case EEXIST: throw .exists(destination)
            case let code: throw .system(SystemError(call: "rename", path: destination, errno: code))
            }
        } else {
            do { try FileSystem.rename(temporary, to: destination) } catch { throw .system(error) }
        }
        keep = true
        FileSystem.syncFolder(folder)
        return total
    }

    /// Reads `input` to its end in 256 KiB chunks, showing each to `observer` and writing it to `output`
    /// (both retried on `EINTR`); returns the bytes copied.
    private static func pump(
        from input: Int32, source: String, to output: Int32, temporary: String, observer: ByteStreamObserver?
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

    /// Fails the copy when the source changed (size, mtime, ctime, inode) while it was read, or fewer bytes came than
    /// it had.
    private static func checkUnchanged(
        _ input: Int32, before: FileStatus, copied total: Int64, source: String
    ) throws(Failure) {
        let after: FileStatus
        do { after = try FileStatus(descriptor: input, path: source) } catch { throw .system(error) }
        if let change = after.change(since: before) { throw .changed(change + " while it was being copied") }
        if total != before.size { throw .changed("\(total) of \(before.size) bytes read while it was being copied") }
    }

    /// `realpath(3)`: the path with every symlink resolved, or nil when it does not exist.
    package static func resolved(_ path: String) -> String? {
        guard let pointer = realpath(path, nil) else { return nil }
        defer { free(pointer) }
        return String(cString: pointer)
    }
}
