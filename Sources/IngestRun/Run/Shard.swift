/// One part of a batch split between independent runs (`--shard I/N`: CI matrix jobs, Kubernetes Indexed Jobs):
/// a file belongs to shard `I` when the FNV-1a hash of its relative path, modulo `N`, is `I`. The hash depends only
/// on the path's bytes, so every machine and every run agrees, and the `N` shards of a tree partition it exactly.
package struct Shard: Sendable, Equatable, CustomStringConvertible {
    /// 0-based, below `count` (Kubernetes' `JOB_COMPLETION_INDEX` can be passed as is).
    package let index: Int
    package let count: Int

    package init(index: Int, count: Int) throws {
        guard count >= 1 else { throw ShardError("the shard count must be at least 1 (found \(count))") }
        guard (0..<count).contains(index) else {
            throw ShardError("the shard index must be from 0 to \(count - 1) for \(count) shards (found \(index))")
        }
        self.index = index
        self.count = count
    }

    /// Parses `I/N`, as given to `--shard`.
    package init(parsing text: String) throws {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]) else {
            throw ShardError("--shard takes INDEX/COUNT, e.g. 0/4 (found '\(text)')")
        }
        try self.init(index: index, count: count)
    }

    package var description: String { "\(index)/\(count)" }

    /// True when the file at `relativePath` (relative to the folder it was found under) is this shard's.
    package func contains(relativePath: String) -> Bool {
        Int(Shard.hash(relativePath) % UInt64(count)) == index
    }

    /// 64-bit FNV-1a of the path's UTF-8 bytes: stable across machines, runs and Swift versions (unlike `Hasher`).
    package static func hash(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }
}

package struct ShardError: Error, Sendable, CustomStringConvertible {
    package var description: String
    init(_ description: String) { self.description = description }
}
