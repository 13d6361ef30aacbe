import Foundation
import IngestCore
import NativeSystem

/// The journal's identity of a file's content: `xxh3-128:<32 hex digits>`, XXH3-128 of every byte. It tells a
/// touched or copied file (same bytes: skipped) from a changed one, which needs no cryptographic hash (rsync 3.2
/// moved its whole-file checksum to XXH3-128 for the same reason); XXH3 runs at memory speed, so it is taken while
/// the bytes are read to be sent instead of in a SHA-256 pass of its own. A journal written before it holds bare
/// SHA-256 hex in the same column: such an identity is still honoured, by comparing the file's SHA-256.
package enum ContentIdentity {
    package static let xxh3Prefix = "xxh3-128:"

    /// True when `identity` is the pre-XXH3 form: 64 hex digits of SHA-256, no algorithm prefix.
    package static func isLegacySHA256(_ identity: String) -> Bool {
        identity.utf8.count == 64 && identity.allSatisfy(\.isHexDigit)
    }

    /// XXH3-128 identity of the file at `path`, read in `ContentHash.chunkSize` reads; `ItemFailed` (rule
    /// `unreadable`) naming the file when it cannot be read.
    package static func identity(path: String, stage: String) throws -> String {
        var digest = StreamDigest(sha256: false, identity: true)
        do {
            try ContentHash.read(path) { digest.update($0) }
        } catch let error as SystemError {
            let verb = error.call == "open" ? "open" : "read"
            throw ItemFailed(
                stage: stage, rule: .unreadable, message: "cannot \(verb) \(path) to hash it: \(error.reason)")
        }
        guard let identity = digest.finalize().identity else {
            throw ItemFailed(stage: stage, rule: .unreadable, message: "cannot hash \(path): out of memory")
        }
        return identity
    }
}

extension Item {
    /// What the journal records as this file's content: the XXH3 identity when known, else the SHA-256 when
    /// something already read the file for it (a `{{sha256}}` dedupe key: no second pass), else nil.
    package var journalIdentity: String? { knownIdentity ?? knownSHA256 }

    /// The XXH3 identity of the input file, read once and cached (a `dedupe`'d or earlier SHA-256 is not enough:
    /// call `journalIdentity` to take whatever is known).
    package func contentIdentity(stage: String = "input") throws -> String {
        if let knownIdentity { return knownIdentity }
        let identity = try ContentIdentity.identity(path: path, stage: stage)
        knownIdentity = identity
        return identity
    }

    /// Takes the identity a journal record holds for this very file (same size, mtime, inode): XXH3 or, from a
    /// journal of an earlier release, SHA-256.
    package func restoreIdentity(_ recorded: String?) {
        guard let recorded else { return }
        if ContentIdentity.isLegacySHA256(recorded) { knownSHA256 = recorded } else { knownIdentity = recorded }
    }

    /// Whether the file's content is the one `recorded` identifies, hashing it by the recorded algorithm (a
    /// journal of an earlier release recorded SHA-256). An identity of an unknown algorithm never matches.
    package func hasContent(identifiedBy recorded: String) throws -> Bool {
        if ContentIdentity.isLegacySHA256(recorded) { return try sha256() == recorded }
        guard recorded.hasPrefix(ContentIdentity.xxh3Prefix) else { return false }
        return try contentIdentity() == recorded
    }
}
