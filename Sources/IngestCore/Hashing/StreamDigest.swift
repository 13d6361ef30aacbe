import Crypto
import Foundation

/// The digests one pass over a stream of bytes must produce — SHA-256, MD5, or both — updated together, so that
/// every digest an upload needs (the signature's SHA-256, Content-MD5 or the ETag's MD5, the journal's SHA-256) is
/// fed by the same read of each chunk instead of a read per digest (issue 13). A digest nobody asked for costs
/// nothing: on a fast link each one costs about as much CPU as sending the bytes.
package struct StreamDigest {
    private var sha: SHA256?
    private var md5: Insecure.MD5?
    /// Bytes fed since the digest was made.
    private(set) var count: Int64 = 0

    package init(sha256: Bool, md5: Bool = false) {
        sha = sha256 ? SHA256() : nil
        self.md5 = md5 ? Insecure.MD5() : nil
    }

    var includesSHA256: Bool { sha != nil }
    var includesMD5: Bool { md5 != nil }

    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        sha?.update(bufferPointer: bytes)
        md5?.update(bufferPointer: bytes)
        count += Int64(bytes.count)
    }

    /// The digests asked for (empty arrays for the others).
    package func finalize() -> Result {
        Result(sha256: sha.map { Array($0.finalize()) } ?? [], md5: md5.map { Array($0.finalize()) } ?? [])
    }

    package struct Result: Sendable, Equatable {
        package var sha256: [UInt8]
        package var md5: [UInt8]
        package var sha256Hex: String { sha256.hexString }
        var md5Hex: String { md5.hexString }
    }
}
