import Foundation

/// Counts the bytes read from the files a test names, by purpose: how a test proves that an upload reads each byte
/// once to hash it and once to send it (issue 13), not once per digest. Untracked paths cost one dictionary lookup
/// under a lock per chunk read; nothing is tracked outside tests.
package enum FileReadCounter {
    package enum Purpose: Sendable { case hash, send }

    private static let lock = NSLock()
    nonisolated(unsafe) private static var tracked: [String: (hash: Int64, send: Int64)] = [:]
    nonisolated(unsafe) private static var anyTracked = false

    /// Starts counting the reads of `path` from zero.
    package static func track(_ path: String) {
        lock.withLock {
            tracked[path] = (0, 0)
            anyTracked = true
        }
    }

    /// Bytes of `path` read since `track(path)` for `purpose`.
    package static func bytes(_ path: String, _ purpose: Purpose) -> Int64 {
        lock.withLock {
            guard let counts = tracked[path] else { return 0 }
            return purpose == .hash ? counts.hash : counts.send
        }
    }

    static func record(_ path: String, _ count: Int, _ purpose: Purpose) {
        guard anyTracked else { return }
        lock.withLock {
            guard var counts = tracked[path] else { return }
            if purpose == .hash { counts.hash += Int64(count) } else { counts.send += Int64(count) }
            tracked[path] = counts
        }
    }
}
