import Foundation
import IngestCore
import NativeCurl
import NativeSystem

/// The requests an `s3` upload would make, for a rehearsal (`--dry-run`, `ingest test`): rendered and
/// signed as for real, handed to the rehearsal with the key and part plan, and never sent.
extension S3Uploader {
    package func rehearse(
        path: String, key: String, headers: [(String, String)], contentType: String, tap: RehearsalTap
    )
        throws -> S3UploadResult
    {
        let status: FileStatus
        do {
            status = try FileStatus(path: path, followLinks: true)
        } catch {
            throw ItemFailed(stage: stage, rule: .unreadable, message: "cannot read the file to upload: \(error)")
        }
        let size = status.size
        let url = endpoint.objectURL(S3Location(bucket: bucket, key: key))
        let headers = [("Content-Type", contentType)] + headers
        var notes = ["key: \(key)", "bucket: \(bucket)"]
        let method: String
        let target: String
        if size <= threshold {
            (method, target) = ("PUT", url)
            notes.append("parts: single PUT of \(size) bytes")
        } else {
            let (partSize, count) = partLayout(fileSize: size)
            let last = size - Int64(count - 1) * partSize
            (method, target) = ("POST", url + "?uploads")
            notes.append(
                "parts: multipart, \(count) parts of \(partSize) bytes (last \(last)), \(partConcurrency) at once")
        }
        // Signed as `putObject` and `multipartUpload` sign theirs: a PUT's payload hashed when the pipeline says so.
        let slice = HTTPBody.FileSlice(path: path, size: size, modified: status.modified)
        var payload = SigV4Payload.empty
        if method == "PUT" { payload = payloadSigning == .signed ? .sha256(try hashSlice(slice).sha256) : .unsigned }
        let unsigned = try SigV4Request(method: method, url: target, headers: headers, payload: payload)
        let signature = signer.signHeaders(unsigned, date: clock.date)
        var request = HTTPRequest(
            method: method, url: target, headers: (headers + signature.headers).map { (name: $0.0, value: $0.1) })
        if method == "PUT" { request.body = HTTPBody(file: slice) }
        let response = tap.answer(request, notes: notes)
        guard (200...299).contains(response.status) else {
            throw refused("\(method) \(Redaction.url(target))", response, attempts: 1)
        }
        let etag = response.header("ETag")?.trimmingCharacters(in: ["\""]) ?? "<rehearsed>"
        return S3UploadResult(
            bucket: bucket, key: key, etag: etag, size: size,
            parts: size <= threshold ? 0 : partLayout(fileSize: size).count,
            location: url, contentType: contentType)
    }
}
