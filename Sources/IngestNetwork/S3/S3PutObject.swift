import Foundation
import IngestCore
import IngestFiles
import NativeCurl
import NativeSystem

/// An `s3` upload of a file up to the multipart threshold: one signed PUT.
extension S3Uploader {
    /// What one PUT produced: the ETag, the file's SHA-256 when a pass computed it, its XXH3 identity when asked.
    struct PutResult {
        var etag: String
        var sha256: String?
        var identity: String?
    }

    /// One PUT. Signed, or with an `x-amz-checksum-*` (whose value must be in the headers before the body), one
    /// pass first hashes everything needed — the signature's SHA-256, the ETag's MD5, the checksum, the journal's
    /// XXH3 identity (`fileSHA256`). Unsigned with `checksum: md5`, the MD5 and identity ride along while it is sent.
    func putObject(
        path: String, status: FileStatus, url: String, headers: [(String, String)], cachedSHA256: String?,
        fileSHA256: Bool, progress: (@Sendable (Int64) -> Void)?
    ) throws -> PutResult {
        // The body is pinned to `status`: a file changed while it is hashed or sent fails the transfer.
        let body = HTTPBody(file: HTTPBody.FileSlice(path: path, status: status))
        var headers = headers
        var payload = SigV4Payload.unsigned
        let observer: DigestObserver
        var hashed: SliceDigest?
        var sentChecksum: String?
        if payloadSigning == .signed || checksum != .md5 {
            let needsSHA256 = (payloadSigning == .signed && cachedSHA256 == nil) || checksum == .sha256
            let digest = try hashSlice(
                body.file!, sha256: needsSHA256, md5: true, crc: checksum.crcKind, identity: fileSHA256)
            if payloadSigning == .signed { payload = .sha256(cachedSHA256 ?? digest.sha256) }
            sentChecksum = checksum.value(of: digest).map { alterChecksum?($0) ?? $0 }
            if let sentChecksum, let name = checksum.headerName { headers.append((name, sentChecksum)) }
            hashed = digest
            observer = DigestObserver(mode: .countOnly)
        } else {
            observer = DigestObserver(sha256: false, md5: true, identity: fileSHA256, mode: .background)
        }
        observer.progress = progress
        let what = "PUT \(Redaction.url(url))"
        let (response, attempts) = try send(
            "PUT", url, headers: headers, payload: payload, body: body, observer: observer)
        guard response.status == 200 else { throw refused(what, response, attempts: attempts) }
        if let hashed {
            let etag = try checkedETag(response, md5: hashed.md5, what: what)
            if let sentChecksum, let name = checksum.headerName {
                try confirmChecksum(returned: response.header(name), sent: sentChecksum, what: what)
            }
            return PutResult(
                etag: etag.trimmingCharacters(in: ["\""]), sha256: hashed.sha256.isEmpty ? nil : hashed.sha256,
                identity: hashed.identity)
        }
        // Curl confirmed every byte sent, so the observer saw the whole file since the last rewind.
        guard observer.count == status.size else {
            throw fail(.changed, "\(what) sent \(observer.count) of \(status.size) bytes")
        }
        let digest = observer.finish()
        let etag = try checkedETag(response, md5: digest.md5, what: what)
        return PutResult(etag: etag.trimmingCharacters(in: ["\""]), identity: fileSHA256 ? digest.identity : nil)
    }
}
