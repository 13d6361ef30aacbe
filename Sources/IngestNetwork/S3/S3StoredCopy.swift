import Crypto
import Foundation
import IngestCore
import Logging
import NativeCurl
import NativeSystem

/// Resuming an `s3` upload: proof, from a HEAD and the file's own MD5s, that the store already holds the object.
extension S3Uploader {
    /// The object this upload would store, when S3 already holds it: after a run was cut short mid-upload (killed
    /// after S3 stored the object but before the journal heard of it), a HEAD proves the upload done instead of
    /// sending the file again. Proof is the file's size and the ETag this upload produces: the MD5 of the file for
    /// a single PUT, or S3's MD5 of the parts' MD5s, "-" and the part count, for a multipart upload (the file is
    /// read once to compute it, which costs far less than sending it). Anything else (no object, another size or
    /// ETag, an encrypted object whose ETag is no MD5, a failed HEAD) is no proof: nil, and the file is uploaded.
    package func storedCopy(
        path: String, key: String, contentType: String, cancellation: RunCancellation? = nil, logger: Logger? = nil,
        timings: FileTimings? = nil
    ) -> S3UploadResult? {
        let uploader = with(cancellation: cancellation, logger: logger, timings: timings)
        guard let status = try? FileStatus(path: path, followLinks: true) else { return nil }
        let url = endpoint.objectURL(S3Location(bucket: bucket, key: key))
        guard let (response, _) = try? uploader.send("HEAD", url), response.status == 200,
            response.header("Content-Length").flatMap(Int64.init) == status.size,
            let etag = response.header("ETag")?.trimmingCharacters(in: ["\""]).lowercased()
        else { return nil }
        var parts = 0
        let expected: String
        do {
            if status.size <= threshold {
                let whole = HTTPBody.FileSlice(path: path, size: status.size, modified: status.modified)
                expected = try uploader.hashSlice(whole, sha256: false, md5: true).md5.hexString
            } else {
                let (size, count) = partLayout(fileSize: status.size)
                var digests: [UInt8] = []
                for index in 0..<count {
                    let slice = Self.partSlice(index, size: size, path: path, status: status)
                    digests += try uploader.hashSlice(slice, sha256: false, md5: true).md5
                }
                expected = Array(Insecure.MD5.hash(data: digests)).hexString + "-\(count)"
                parts = count
            }
        } catch {
            return nil
        }
        guard etag == expected else { return nil }
        return S3UploadResult(
            bucket: bucket, key: key, etag: etag, size: status.size, parts: parts, location: url,
            contentType: response.header("Content-Type") ?? contentType)
    }
}
