#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension FileSystem {
    /// Creates an empty file in place (`open(O_CREAT)` and close): `FileManager.createFile` writes a temp file and
    /// renames it, which a kill could leave behind. An existing file is left as it is.
    package static func createEmpty(_ path: String, mode: mode_t = 0o644) throws(SystemError) {
        let descriptor = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw SystemError.last(call: "open", path: path) }
        close(descriptor)
    }

    /// Appends `bytes` to the file at `path`, creating it if missing — for files other programs write too (a CI
    /// job summary), so it is never replaced.
    package static func append(_ bytes: [UInt8], to path: String, mode: mode_t = 0o644) throws(SystemError) {
        let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw SystemError.last(call: "open", path: path) }
        defer { close(descriptor) }
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { throw SystemError.last(call: "write", path: path) }
            offset += written
        }
    }

    /// Why the file at `path` cannot be opened for reading, or nil when it can: for messages about a file a
    /// library refused, where the library's own error does not say "permission denied" or "no such file".
    package static func openFailure(_ path: String) -> SystemError? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor < 0 else {
            close(descriptor)
            return nil
        }
        return SystemError.last(call: "open", path: path)
    }
}
