import Foundation
import IngestCore

/// ListParts, page by page: which parts S3 holds for an open multipart upload.
extension S3Uploader {
    /// Every part S3 holds for the upload, in part order; nil when S3 no longer knows the upload (`NoSuchUpload`:
    /// aborted, completed, or expired by the bucket's lifecycle rule). Pages of `listPartsPageSize` parts.
    func listParts(url: String, uploadQuery: String) throws -> [StoredPart]? {
        var parts: [StoredPart] = []
        var marker = 0
        // At most 10,000 parts: bounded however the server pages.
        for _ in 0...S3UploadOptions.maximumParts {
            let pageURL = "\(url)?max-parts=\(listPartsPageSize)&part-number-marker=\(marker)&\(uploadQuery)"
            let (response, attempts) = try send("GET", pageURL)
            let what = "ListParts \(Redaction.url(url))"
            if response.status == 404 {
                let code = XMLText.element("Code", in: response.bodyText)
                if code == nil || code == "NoSuchUpload" { return nil }
            }
            guard response.status == 200 else { throw refused(what, response, attempts: attempts) }
            let page = Self.parts(in: response.bodyText)
            parts += page
            let next =
                XMLText.element("NextPartNumberMarker", in: response.bodyText).flatMap { Int($0) }
                ?? page.last?.number
            guard XMLText.element("IsTruncated", in: response.bodyText) == "true", let next, next > marker else {
                break
            }
            marker = next
        }
        return parts.sorted { $0.number < $1.number }
    }

    /// The `<Part>` elements of a ListParts answer.
    static func parts(in text: String) -> [StoredPart] {
        var parts: [StoredPart] = []
        var rest = text[...]
        while let open = rest.range(of: "<Part>"),
            let close = rest.range(of: "</Part>", range: open.upperBound..<rest.endIndex)
        {
            let block = String(rest[open.upperBound..<close.lowerBound])
            rest = rest[close.upperBound...]
            guard let number = XMLText.element("PartNumber", in: block).flatMap({ Int($0) }),
                let size = XMLText.element("Size", in: block).flatMap({ Int64($0) })
            else { continue }
            parts.append(
                StoredPart(
                    number: number, etag: XMLText.element("ETag", in: block) ?? "", size: size,
                    checksumSHA256: XMLText.element("ChecksumSHA256", in: block), journaled: nil))
        }
        return parts
    }
}
