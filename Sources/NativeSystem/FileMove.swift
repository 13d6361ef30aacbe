internal import CSystemShims

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Moves a file to a name that must not exist yet, never replacing one that does, with no window for a race:
/// `renameat2(RENAME_NOREPLACE)` on one file system (atomic), `link(2)` + `unlink(2)` where the file system cannot do
/// that, and across file systems a copy to a temporary name in the target folder (fsynced), put in place without
/// replacing, and only then the source unlinked (`mv`'s and rclone `move`'s order: the source goes last).
package enum FileMove {
    /// How the file got there.
    package enum Method: String, Sendable {
        case renamed
        case copied
    }

    package enum Failure: Error, Sendable, CustomStringConvertible {
        /// The name in the target is taken: nothing was changed.
        case exists(String)
        case system(SystemError)
        /// The source changed while it was copied: the copy was dropped, the source left.
        case changed(String)

        package var description: String {
            switch self {
            case .exists(let path): return "\(path) already exists (not replaced)"
            case .system(let error): return error.description
            case .changed(let what): return what
            }
        }
    }

    /// Moves `source` to `destination`, making the destination's missing folders. `expected`: the file as it was
    /// validated; a copy across file systems fails when the open file is not that one.
    @discardableResult
    package static func move(
        from source: String, to destination: String, expected: FileStatus? = nil, forceCopy: Bool = false
    ) throws(Failure) -> Method {
        let folder = destination.lastIndex(of: "/").map { String(destination[..<$0]) } ?? "."
        do { try StillFile.makeDirectories(folder) } catch let error as SystemError {
            throw .system(error)
        } catch {
            throw .system(SystemError(call: "mkdir", path: folder, errno: EIO))
        }
        if !forceCopy {
            switch renameWithoutReplacing(source, destination) {
            case 0:
                FileSystem.syncFolder(folder)
                return .renamed
            case EXDEV: break
            case let code: throw code == EEXIST ? .exists(destination) : .system(call: "rename", destination, code)
            }
        }
        try copyThenUnlink(source, destination, expected: expected)
        return .copied
    }

    /// `renameat2(RENAME_NOREPLACE)`, else `link` + `unlink` where the file system or kernel cannot (`EINVAL`,
    /// `ENOSYS`); 0 or the errno.
    static func renameWithoutReplacing(_ source: String, _ destination: String) -> Int32 {
        if ingest_rename_noreplace(source, destination) == 0 { return 0 }
        let code = errno
        guard code == EINVAL || code == ENOSYS else { return code }
        if link(source, destination) != 0 { return errno }
        if unlink(source) != 0 {
            let failed = errno
            unlink(destination)
            return failed
        }
        return 0
    }

    /// Across file systems: `AtomicCopy` into a temporary name of the target folder (read in chunks, fsynced,
    /// checked unchanged), put in place without replacing, then the source unlinked.
    private static func copyThenUnlink(_ source: String, _ destination: String, expected: FileStatus?) throws(Failure) {
        do {
            try AtomicCopy.copy(from: source, to: destination, replace: false, expected: expected)
        } catch {
            switch error {
            case .exists(let path): throw .exists(path)
            case .system(let system): throw .system(system)
            case .changed(let what): throw .changed(what)
            }
        }
        guard unlink(source) == 0 else { throw .system(call: "unlink", source, errno) }
    }
}

extension FileMove.Failure {
    fileprivate static func system(call: String, _ path: String, _ code: Int32) -> FileMove.Failure {
        .system(SystemError(call: call, path: path, errno: code))
    }
}
