import NativeSystem

/// The files and folders given on the command line.
package enum InputPaths {
    /// What is wrong with each path that does not exist (a typo, a symlink to nothing): such a path is a usage
    /// error, named before anything runs, not a file that failed. A path that exists but cannot be read is left
    /// to the walker, which fails it as a file.
    package static func missing(_ paths: [String]) -> [String] {
        paths.compactMap { path -> String? in
            let errno: Int32
            do {
                _ = try FileStatus(path: path, followLinks: true)
                return nil
            } catch {
                errno = (error as? SystemError)?.errno ?? 0
            }
            guard errno == SystemError.noSuchFile || errno == SystemError.notADirectory else { return nil }
            if (try? FileStatus(path: path, followLinks: false))?.kind == .symlink {
                return "\(path): a symlink to a file or folder that does not exist"
            }
            return "\(path): no such file or folder"
        }
    }
}
