import Crypto
import Foundation
import IngestCore
import NativeSystem

extension Item {
    /// SHA-256 (lower-case hex) of the input file, read once in 256 KiB chunks and cached: the journal, `dedupe`
    /// keys and the `{{sha256}}` template share the one value, so a file is never hashed twice.
    package func sha256(stage: String = "input") throws -> String {
        if let knownSHA256 { return knownSHA256 }
        if artifact == path, case .string(let streamed)? = templateValues["sha256"] {
            knownSHA256 = streamed
            return streamed
        }
        let digest = try ContentHash.sha256(path: path, stage: stage)
        knownSHA256 = digest
        return digest
    }
}

/// Streaming SHA-256 of a file: bounded memory for a file of any size.
package enum ContentHash {
    static let chunkSize = 256 * 1024

    /// Throws `ItemFailed` (rule `unreadable`) naming the file when it cannot be opened or read.
    package static func sha256(path: String, stage: String) throws -> String {
        var digest = StreamDigest(sha256: true)
        do {
            try read(path) { digest.update($0) }
        } catch let error as SystemError {
            let verb = error.call == "open" ? "open" : "read"
            throw ItemFailed(
                stage: stage, rule: .unreadable, message: "cannot \(verb) \(path) to hash it: \(error.reason)")
        }
        return digest.finalize().sha256Hex
    }

    /// Hands the whole file to `consume` in `chunkSize` reads: the one way a whole file is read to be hashed
    /// (counted by `FileReadCounter` as hashing). Throws `SystemError` when it cannot be opened or read.
    static func read(_ path: String, into consume: (UnsafeRawBufferPointer) throws -> Void) throws {
        _ = try readFileSlice(path: path, offset: 0, length: Int64.max, chunkSize: chunkSize, consume)
    }

    /// SHA-256 of text (the effective pipeline configuration).
    package static func sha256(text: String) -> String { SHA256.hash(data: Data(text.utf8)).hexString }
}
