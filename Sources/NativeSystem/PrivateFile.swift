#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Files only their owner may read: the journal holds live signed URLs and POST signatures.
package enum PrivateFile {
    /// Creates an empty file at `path` with mode 0600 whatever the umask (`open(O_CREAT | O_EXCL)`, then
    /// `fchmod`); fails with `EEXIST` when something is there already.
    package static func create(_ path: String) throws(SystemError) {
        let descriptor = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw SystemError(call: "open", path: path, errno: errno) }
        defer { close(descriptor) }
        guard fchmod(descriptor, 0o600) == 0 else { throw SystemError(call: "fchmod", path: path, errno: errno) }
    }

    /// Takes the group's and others' permissions off an existing file (`chmod`); nothing when there is no file.
    package static func restrict(_ path: String) throws(SystemError) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            if errno == ENOENT { return }
            throw SystemError(call: "stat", path: path, errno: errno)
        }
        let mode = info.st_mode & 0o7777
        guard mode & 0o077 != 0 else { return }
        guard chmod(path, mode & ~0o077) == 0 else { throw SystemError(call: "chmod", path: path, errno: errno) }
    }
}
