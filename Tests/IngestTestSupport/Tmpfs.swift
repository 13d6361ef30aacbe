import Foundation

/// A small tmpfs mounted for one test (a second file system for a move across them, or a disk that fills up); needs
/// root with CAP_SYS_ADMIN, so tests using it are skipped where `mount` is refused.
final class Tmpfs {
    let path: String

    init?(at path: String, size: String = "4m") {
        self.path = path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        guard (try? runCommand("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", path]))?.status == 0
        else { return nil }
    }

    deinit { _ = try? runCommand("/bin/umount", ["-l", path]) }

    /// Whether this machine lets the tests mount one.
    static let available: Bool = {
        let probe = NSTemporaryDirectory() + "ingest-tmpfs-probe-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: probe) }
        return Tmpfs(at: probe, size: "64k") != nil
    }()
}
