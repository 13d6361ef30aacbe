import Foundation
import Synchronization

/// Counts the bytes read from the files a test names, by purpose: how a test proves that an upload reads each byte
/// once to hash it and once to send it (issue 13), not once per digest. Untracked paths cost one dictionary lookup
/// under a lock per chunk read once any path is tracked; nothing is tracked outside tests.
package enum FileReadCounter {
    package enum Purpose: Sendable { case hash, send }

    private struct Counts { var hash: Int64 = 0, send: Int64 = 0 }
    private static let tracked = Mutex<[String: Counts]>([:])
    /// Set once a test tracks a path, read without the lock on every chunk (so untracked runs pay one atomic load).
    private static let anyTracked = Atomic<Bool>(false)

    /// Starts counting the reads of `path` from zero.
    package static func track(_ path: String) {
        tracked.withLock { $0[path] = Counts() }
        anyTracked.store(true, ordering: .releasing)
    }

    /// Bytes of `path` read since `track(path)` for `purpose`.
    package static func bytes(_ path: String, _ purpose: Purpose) -> Int64 {
        tracked.withLock { tracked in
            guard let counts = tracked[path] else { return 0 }
            return purpose == .hash ? counts.hash : counts.send
        }
    }

    package static func record(_ path: String, _ count: Int, _ purpose: Purpose) {
        guard anyTracked.load(ordering: .acquiring) else { return }
        tracked.withLock { tracked in
            guard var counts = tracked[path] else { return }
            if purpose == .hash { counts.hash += Int64(count) } else { counts.send += Int64(count) }
            tracked[path] = counts
        }
    }
}
