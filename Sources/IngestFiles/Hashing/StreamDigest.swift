import Crypto
import Foundation
import IngestCore
import NativeXXHash
import NativeZlib

/// The digests one pass over a stream of bytes must produce — SHA-256, MD5, or both — updated together, so that
/// every digest an upload needs (the signature's SHA-256, Content-MD5 or the ETag's MD5, the journal's SHA-256) is
/// fed by the same read of each chunk instead of a read per digest (issue 13). A digest nobody asked for costs
/// nothing: on a fast link each one costs about as much CPU as sending the bytes.
package struct StreamDigest {
    private var sha: SHA256?
    private var md5: Insecure.MD5?
    /// XXH3-128, the journal's identity of the content (`ContentIdentity`): at memory speed, so it can ride along.
    private var xxh3: XXH3Hasher?
    /// A CRC S3 checks (`checksum: crc64nvme | crc32c | crc32`).
    private var crc: CRC?
    /// Bytes fed since the digest was made.
    private(set) var count: Int64 = 0

    package init(sha256: Bool, md5: Bool = false, identity: Bool = false, crc: CRCKind? = nil) {
        sha = sha256 ? SHA256() : nil
        self.md5 = md5 ? Insecure.MD5() : nil
        xxh3 = identity ? try? XXH3Hasher() : nil
        self.crc = crc.map(CRC.init)
    }

    package var includesSHA256: Bool { sha != nil }
    package var includesMD5: Bool { md5 != nil }

    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        sha?.update(bufferPointer: bytes)
        md5?.update(bufferPointer: bytes)
        xxh3?.update(bytes)
        crc?.update(bytes)
        count += Int64(bytes.count)
    }

    /// The digests asked for (empty arrays for the others).
    package func finalize() -> Result {
        Result(
            sha256: sha.map { Array($0.finalize()) } ?? [], md5: md5.map { Array($0.finalize()) } ?? [],
            xxh3: xxh3?.digest() ?? [], crc: crc)
    }

    package struct Result: Sendable, Equatable {
        package var sha256: [UInt8]
        package var md5: [UInt8]
        /// XXH3-128, canonical order (empty when not asked for).
        package var xxh3: [UInt8] = []
        package var crc: CRC? = nil
        package var sha256Hex: String { sha256.hexString }
        var md5Hex: String { md5.hexString }
        /// The journal's identity (`xxh3-128:<hex>`), nil when XXH3 was not computed.
        package var identity: String? { xxh3.isEmpty ? nil : ContentIdentity.xxh3Prefix + xxh3.hexString }
    }
}
