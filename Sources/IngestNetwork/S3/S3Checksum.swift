import Crypto
import Foundation
import IngestCore
import Logging
import NativeZlib

/// `checksum:` on the wire: the `x-amz-checksum-*` header a PUT or part carries, what CreateMultipartUpload
/// announces (FULL_OBJECT for the CRCs, whose whole-object value follows from the parts'; COMPOSITE for SHA-256),
/// and the element CompleteMultipartUpload lists per part. `md5` stays Content-MD5 and the ETag check.
extension S3PartChecksum {
    var crcKind: CRCKind? { CRCKind(rawValue: rawValue) }
    /// `x-amz-checksum-crc64nvme` …; nil for md5.
    var headerName: String? { self == .md5 ? nil : "x-amz-checksum-" + rawValue }
    /// `CRC64NVME`, `SHA256` …: `x-amz-checksum-algorithm`'s value.
    var algorithmName: String { rawValue.uppercased() }
    /// The CompleteMultipartUpload part element and result element (`ChecksumCRC64NVME` …).
    var completeElement: String { "Checksum" + algorithmName }
    /// `x-amz-checksum-type` of a multipart upload: FULL_OBJECT where S3 offers it (the CRCs), else COMPOSITE.
    var multipartType: String? { self == .md5 ? nil : crcKind != nil ? "FULL_OBJECT" : "COMPOSITE" }

    /// What CreateMultipartUpload announces.
    var createHeaders: [(String, String)] {
        guard let multipartType else { return [] }
        return [("x-amz-checksum-algorithm", algorithmName), ("x-amz-checksum-type", multipartType)]
    }

    /// The header value (base64 of the big-endian digest) for bytes hashed into `digest`; nil for md5.
    func value(of digest: S3Uploader.SliceDigest) -> String? {
        switch self {
        case .md5: return nil
        case .sha256: return digest.sha256Base64
        case .crc64nvme, .crc32c, .crc32: return digest.crc.map { Data($0.bigEndianBytes).base64EncodedString() }
        }
    }
}

extension S3Uploader {
    /// The whole object's checksum S3 reports for a completed multipart upload, from the parts' checksums in order:
    /// FULL_OBJECT CRCs are combined (`CRC.combine`), a COMPOSITE SHA-256 is the SHA-256 of the parts' digests
    /// with `-<parts>`. Nil for md5, or when a part's checksum is missing.
    func objectChecksum(parts: [(etag: String, checksum: String?)], partSize: Int64, fileSize: Int64) -> String? {
        let digests = parts.compactMap { $0.checksum.flatMap { Data(base64Encoded: $0) } }
        guard checksum != .md5, digests.count == parts.count, !parts.isEmpty else { return nil }
        guard let kind = checksum.crcKind else {
            return Data(SHA256.hash(data: digests.reduce(Data(), +))).base64EncodedString() + "-\(parts.count)"
        }
        var total: UInt64 = 0
        for (index, digest) in digests.enumerated() {
            let value = digest.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let length = min(partSize, fileSize - Int64(index) * partSize)
            total = index == 0 ? value : CRC.combine(kind, total, value, secondLength: length)
        }
        let bytes = (0..<kind.byteCount).reversed().map { UInt8(truncatingIfNeeded: total >> (8 * UInt64($0))) }
        return Data(bytes).base64EncodedString()
    }

    /// Checks the checksum the store returned (`returned`: a response header, or CompleteMultipartUpload's element)
    /// against `sent`: a different one fails (rule `checksum`); none at all means the store did not say it verified
    /// anything, and `-v` says so instead of claiming it was verified (`quiet` for a part: the object's line says it).
    func confirmChecksum(returned: String?, sent: String, what: String, quiet: Bool = false) throws {
        let name = checksum.headerName ?? "Content-MD5"
        guard let returned, !returned.isEmpty else {
            if !quiet {
                let said =
                    "\(what): \(name) not verified: the store returned no \(checksum.algorithmName) checksum "
                    + "(it ignores the header, or does not say); the ETag check still applies"
                logger?.info("\(said)")
            }
            return
        }
        guard returned == sent else {
            throw ItemFailed(
                stage: stage, rule: .checksum,
                message:
                    "\(what) answered with \(name) \(returned.prefix(80)), not \(sent), the one of the bytes sent: "
                    + "the store holds something else",
                expected: sent, actual: String(returned.prefix(80)))
        }
        if !quiet { logger?.info("\(what): the store verified \(name) \(sent)") }
    }
}
