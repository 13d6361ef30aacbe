import Foundation
import IngestCore

/// No multipart upload left open by a lost answer. A CreateMultipartUpload whose answer is lost (the connection reset
/// after S3 created the upload) is retried and makes a second upload; a run killed between S3's answer and the
/// journal's write never learns the id. So the intent is journaled before the create (an upload row without an id,
/// stamped with its time), and after a create that took more than one attempt, or when a later run finds an intent
/// without an id, the key's open uploads are listed (ListMultipartUploads, the key as prefix) and those this run
/// started and does not use are aborted.
///
/// Which are "ours": S3 lists no metadata of an open upload (a marker sent with the create could not be read back),
/// so an upload counts as this run's when its key is the exact key and S3 initiated it within the create's time
/// window: from the journaled intent to the create's answer (or, after a kill, to the latest moment the killed run
/// could still have been sending it: the intent plus the retries' `max_elapsed` and an attempt's limit), both read on
/// S3's clock (the listing's `Date` header gives the offset) and widened by a few seconds for its whole-second
/// resolution. Another client's upload to the same key outside that window is never touched.
extension S3Uploader {
    /// An upload S3 lists as open for a key.
    struct OpenUpload: Equatable {
        var key: String
        var uploadID: String
        var initiated: Date?
    }

    /// Seconds the window is widened on each side: `Date` and the journal's stamp keep whole seconds.
    static let sweepMargin: TimeInterval = 3

    /// Journals that a CreateMultipartUpload is about to be sent for `target` (an upload row without an id), so a
    /// run killed before its answer is journaled leaves the next run a trace to clean up after. Without a journal
    /// nothing is kept.
    func journalIntent(_ target: MultipartTarget) {
        journalUpload(target, uploadID: "")
    }

    /// The latest a create journaled at `intent` can have reached S3 when the run that sent it died: the intent plus
    /// every retry's allowance (`max_elapsed`) and one attempt's limit.
    func createDeadline(after intent: Date) -> Date {
        let attempt = network.timeout?.seconds ?? 300
        return intent.addingTimeInterval(network.maxElapsed.seconds + attempt)
    }

    /// Aborts the uploads open on `key` (object `url`) that S3 initiated between `from` and `to` (the run's
    /// clock), except `keeping`; returns how many. Throws when the listing fails (the caller decides whether that may
    /// wait for a later run).
    @discardableResult
    func sweepOpenUploads(url: String, key: String, from: Date, to: Date?, keeping: String?) throws -> Int {
        let (listed, offset) = try listOpenUploads(key: key)
        let low = from.addingTimeInterval(offset - Self.sweepMargin)
        let high = (to ?? clock.date).addingTimeInterval(offset + Self.sweepMargin)
        var aborted = 0
        for upload in listed where upload.key == key && upload.uploadID != keeping {
            guard let initiated = upload.initiated, initiated >= low, initiated <= high else {
                let why = "begun outside this run's create (\(upload.initiated.map { "\($0)" } ?? "no time listed"))"
                logger?.info("open multipart upload \(upload.uploadID) on \(Redaction.url(url)) left alone: \(why)")
                continue
            }
            let note = abort(url: url, uploadQuery: "uploadId=" + AWSURI.encode(upload.uploadID))
            logger?.info(
                "multipart upload \(upload.uploadID), begun by a create whose answer was lost, is not used\(note)")
            aborted += 1
        }
        return aborted
    }

    /// The uploads S3 lists as open under `key` (paged), and S3's clock minus this machine's (from `Date`; 0 when
    /// the answer has none).
    func listOpenUploads(key: String) throws -> (uploads: [OpenUpload], offset: TimeInterval) {
        var uploads: [OpenUpload] = []
        var offset: TimeInterval = 0
        var marker: (key: String, upload: String)?
        let base = endpoint.bucketURL(bucket) + "?prefix=" + AWSURI.encode(key) + "&uploads="
        for _ in 0..<100 {
            let page = marker.map {
                base + "&key-marker=\(AWSURI.encode($0.key))&upload-id-marker=\(AWSURI.encode($0.upload))"
            }
            let (response, attempts) = try send("GET", page ?? base)
            guard response.status == 200 else {
                throw refused("ListMultipartUploads \(Redaction.url(base))", response, attempts: attempts)
            }
            if let date = response.header("Date").flatMap(Self.httpDate) { offset = date.timeIntervalSince(clock.date) }
            uploads += Self.openUploads(in: response.bodyText)
            guard XMLText.element("IsTruncated", in: response.bodyText) == "true",
                let nextKey = XMLText.element("NextKeyMarker", in: response.bodyText),
                let nextUpload = XMLText.element("NextUploadIdMarker", in: response.bodyText),
                nextKey != marker?.key || nextUpload != marker?.upload
            else { break }
            marker = (nextKey, nextUpload)
        }
        return (uploads, offset)
    }

    /// The `<Upload>` elements of a ListMultipartUploads answer.
    static func openUploads(in text: String) -> [OpenUpload] {
        var uploads: [OpenUpload] = []
        var rest = text[...]
        while let open = rest.range(of: "<Upload>"),
            let close = rest.range(of: "</Upload>", range: open.upperBound..<rest.endIndex)
        {
            let block = String(rest[open.upperBound..<close.lowerBound])
            rest = rest[close.upperBound...]
            guard let key = XMLText.element("Key", in: block), let id = XMLText.element("UploadId", in: block) else {
                continue
            }
            uploads.append(
                OpenUpload(key: key, uploadID: id, initiated: XMLText.element("Initiated", in: block).flatMap(isoDate)))
        }
        return uploads
    }

    /// `2026-11-27T23:10:04.123Z` (S3's `Initiated`), with or without fractions of a second.
    static func isoDate(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }

    /// An HTTP `Date` header (`Fri, 27 Nov 2026 23:10:04 GMT`).
    static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text.trimmingCharacters(in: .whitespaces))
    }
}
