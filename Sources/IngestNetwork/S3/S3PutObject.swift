import Foundation
import IngestCore
import IngestNative

/// An `s3` upload of a file up to the multipart threshold: one signed PUT.
extension S3Uploader {
    /// One PUT; returns the ETag and, when `fileSHA256`, the file's SHA-256. Signed, the signature needs the
    /// SHA-256 before the first byte goes out: one pass hashes it and the ETag's MD5 (it is also the journal's hash,
    /// and S3 checks it against the bytes it receives). Unsigned, both ride along while the file is sent.
    func putObject(
        path: String, status: FileStatus, url: String, headers: [(String, String)], cachedSHA256: String?,
        fileSHA256: Bool, progress: (@Sendable (Int64) -> Void)?
    ) throws -> (etag: String, sha256: String?) {
        // The body is pinned to `status`: a file changed while it is hashed or sent fails the transfer.
        let body = HTTPBody(file: HTTPBody.FileSlice(path: path, status: status))
        let payload: SigV4Payload
        let observer: DigestObserver
        var hashed: SliceDigest?
        switch payloadSigning {
        case .unsigned:
            payload = .unsigned
            observer = DigestObserver(sha256: fileSHA256, md5: true, mode: .background)
        case .signed:
            let digest = try hashSlice(body.file!, sha256: cachedSHA256 == nil, md5: true)
            payload = .sha256(cachedSHA256 ?? digest.sha256)
            hashed = digest
            observer = DigestObserver(mode: .countOnly)
        }
        observer.progress = progress
        let (response, attempts) = try send(
            "PUT", url, headers: headers, payload: payload, body: body, observer: observer)
        guard response.status == 200 else { throw refused("PUT \(Redaction.url(url))", response, attempts: attempts) }
        if let hashed {
            let etag = try checkedETag(response, md5: hashed.md5, what: "PUT \(Redaction.url(url))")
            return (etag.trimmingCharacters(in: ["\""]), fileSHA256 ? hashed.sha256 : nil)
        }
        // Curl confirmed every byte sent, so the observer saw the whole file since the last rewind.
        guard observer.count == status.size else {
            throw fail(.changed, "PUT \(Redaction.url(url)) sent \(observer.count) of \(status.size) bytes")
        }
        let digest = observer.finish()
        let etag = try checkedETag(response, md5: digest.md5, what: "PUT \(Redaction.url(url))")
        return (etag.trimmingCharacters(in: ["\""]), fileSHA256 ? digest.sha256Hex : nil)
    }
}
