import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One open descriptor of a file (by device and inode, whatever name reached it), shared by everything in this
/// process that uses the file and closed when the last of them lets go. Closing *any* descriptor of a file drops
/// every POSIX lock the process holds on it — SQLite's own locks on a database among them (sqlite.org/howtocorrupt
/// §2.2) — so a descriptor of a SQLite file must outlive each connection to it: every connection keeps this object
/// (`Database.keepAlive`), and a second open of the same file reuses it instead of opening (and closing) another.
package final class SharedFileDescriptor: Sendable {
    private struct Identity: Hashable {
        var device: UInt64
        var inode: UInt64

        init(_ info: stat) {
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
        }
    }

    private struct Weak {
        weak var file: SharedFileDescriptor?
    }

    /// The open files of this process, and those a `FileIdentityLock` of this process holds (`flock` is per
    /// descriptor, and this process has one descriptor of the file).
    private struct Registry {
        var files: [Identity: Weak] = [:]
        var locked: Set<Identity> = []
    }
    private static let registry = Mutex(Registry())

    fileprivate let descriptor: Int32
    private let identity: Identity

    private init(descriptor: Int32, identity: Identity) {
        self.descriptor = descriptor
        self.identity = identity
    }

    deinit {
        let identity = identity
        SharedFileDescriptor.registry.withLock { registry in
            if let current = registry.files[identity], current.file == nil { registry.files[identity] = nil }
        }
        close(descriptor)
    }

    /// The descriptor of the file at `path` (symlinks followed), opened read-only on first use.
    package static func of(path: String) throws(SystemError) -> SharedFileDescriptor {
        try registry.withLock { (registry) throws(SystemError) -> SharedFileDescriptor in
            var info = stat()
            guard stat(path, &info) == 0 else { throw SystemError(call: "stat", path: path, errno: errno) }
            if let known = registry.files[Identity(info)]?.file { return known }
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw SystemError(call: "open", path: path, errno: errno) }
            guard fstat(descriptor, &info) == 0 else {
                let failure = SystemError(call: "fstat", path: path, errno: errno)
                close(descriptor)
                throw failure
            }
            // The name was moved onto a file this process already has open in between: this descriptor stays open
            // (closing it would drop the process's locks on that file), and the known one is used.
            if let known = registry.files[Identity(info)]?.file { return known }
            let file = SharedFileDescriptor(descriptor: descriptor, identity: Identity(info))
            registry.files[file.identity] = Weak(file: file)
            return file
        }
    }

    /// `flock(LOCK_EX | LOCK_NB)`: throws `EWOULDBLOCK` when another process, or another lock of this one, has it.
    fileprivate func lock(path: String) throws(SystemError) {
        try SharedFileDescriptor.registry.withLock { (registry) throws(SystemError) in
            guard !registry.locked.contains(identity) else {
                throw SystemError(call: "flock", path: path, errno: EWOULDBLOCK)
            }
            guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
                throw SystemError(call: "flock", path: path, errno: errno)
            }
            registry.locked.insert(identity)
        }
    }

    /// Lets the lock go; the descriptor stays open for the connections that keep it.
    fileprivate func unlock() {
        SharedFileDescriptor.registry.withLock { registry in
            guard registry.locked.remove(identity) != nil else { return }
            flock(descriptor, LOCK_UN)
        }
    }
}

/// An exclusive advisory lock on a file itself (`flock` on its descriptor), not on a name: a symlink or another
/// hard link to the same file is refused like the same name. Held until `deinit`, and dropped by the kernel when
/// the process dies. `flock` does not touch the POSIX (`fcntl`) locks SQLite takes on the same file.
package final class FileIdentityLock {
    /// The file's descriptor in this process: SQLite connections to the file keep it open.
    package let file: SharedFileDescriptor
    /// False when taking the lock failed: the lock another object of this process holds is not this one's to drop.
    private var held = false

    /// Takes the lock on the file at `path` (which must exist); throws `EWOULDBLOCK` at once when another process
    /// (or another lock of this one) holds it.
    package init(path: String) throws(SystemError) {
        file = try SharedFileDescriptor.of(path: path)
        try file.lock(path: path)
        held = true
    }

    deinit { if held { file.unlock() } }
}
