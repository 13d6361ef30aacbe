import Foundation
import IngestCore
import NativeCurl

/// An `s3` upload counts as stored only on the store's word: a 200 must carry the ETag of what was stored, and where
/// the MD5 of the bytes is known (a part sent with Content-MD5, a single PUT) that ETag must be it. A proxy or store
/// that answers 200 without storing the bytes, or stores others, fails the part or object instead of passing.
extension S3Uploader {
    /// The response's ETag as sent (quotes kept: CompleteMultipartUpload quotes it back), once it is present and,
    /// when `md5` is given and the object is not KMS- or customer-key encrypted (S3's ETag is then no MD5), equal
    /// to it. `what` names the request ("PUT https://…/key", "UploadPart 3 of 9 for …").
    func checkedETag(_ response: HTTPResponse, md5: [UInt8]?, what: String) throws -> String {
        let etag = response.header("ETag") ?? ""
        let bare = etag.trimmingCharacters(in: CharacterSet(charactersIn: "\" ")).lowercased()
        guard !bare.isEmpty else {
            throw ItemFailed(
                stage: stage, rule: .etag,
                message:
                    "\(what) answered \(response.status) without an ETag: the store did not confirm what it stored",
                expected: "an ETag", actual: "none")
        }
        if let md5, !Self.etagIsNotMD5(response) {
            let expected = md5.hexString
            guard bare == expected else {
                throw ItemFailed(
                    stage: stage, rule: .etag,
                    message:
                        "\(what) answered \(response.status) with ETag \(etag.prefix(80)), not the MD5 of the bytes sent "
                        + "(\(expected)): the store holds something else",
                    expected: expected, actual: bare)
            }
        }
        return etag
    }

    /// SSE-KMS (and DSSE-KMS) and SSE-C objects get an ETag that is not the MD5 of their bytes.
    static func etagIsNotMD5(_ response: HTTPResponse) -> Bool {
        let encryption = response.header("x-amz-server-side-encryption")?.lowercased() ?? ""
        return encryption.hasPrefix("aws:kms")
            || response.header("x-amz-server-side-encryption-customer-algorithm") != nil
    }
}
