#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension FileSystem {
    /// `mkdir(2)` of `path` and of each missing folder above it (as `mkdir -p`); a folder already there is fine.
    /// A failure names the folder that could not be made and keeps the C text (`mkdir(/srv/out): permission
    /// denied`), where Foundation's `createDirectory` says only "You don't have permission".
    package static func makeFolders(_ path: String, mode: mode_t = 0o755) throws(SystemError) {
        guard !path.isEmpty else { return }
        var folder = ""
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            folder += (folder.isEmpty && !path.hasPrefix("/") ? "" : "/") + component
            if mkdir(folder, mode) == 0 { continue }
            let failure = errno
            // A folder (or a symlink to one) already there is fine, whatever mkdir said of it (EEXIST, or EACCES
            // and EROFS above a folder we may not write).
            if (try? FileStatus(path: folder, followLinks: true))?.kind == .directory { continue }
            throw SystemError(call: "mkdir", path: folder, errno: failure)
        }
    }
}

extension FileSystem {
    /// `mkdir(2)` of `path` alone: its parent must exist, and a folder already there is an error (`EEXIST`), for a
    /// folder that must be new.
    package static func makeFolder(_ path: String, mode: mode_t = 0o755) throws(SystemError) {
        guard mkdir(path, mode) == 0 else { throw SystemError(call: "mkdir", path: path, errno: errno) }
    }
}
