import Foundation
import IngestCore
import NativeCurl
import NativeSystem

/// S3 multipart upload: CreateMultipartUpload → UploadPart × n (`partConcurrency` at once) →
/// CompleteMultipartUpload, and AbortMultipartUpload on any failure so no parts stay behind.
extension S3Uploader {
    /// One multipart upload under way: the file as it was when the upload began, where its parts go, how it is cut.
    struct MultipartTarget {
        let path: String
        let status: FileStatus
        /// The object's URL, without the upload's query.
        let url: String
        /// `uploadId=…`, as S3 handed it out (empty until the create is answered).
        var uploadQuery: String
        let partSize: Int64
        let count: Int
        /// The object's key and the upload's id, as the journal keeps them.
        var key = ""
        var uploadID: String?
        /// Parts S3 already holds (a resumed upload): each is checked against the file and sent only if it differs.
        var stored: [Int: StoredPart] = [:]
    }

    /// CreateMultipartUpload (or the journaled upload resumed) → UploadPart × n → CompleteMultipartUpload;
    /// AbortMultipartUpload on a failure for good (a stopped run or a lost network keeps a journaled upload).
    func multipartUpload(
        path: String, key: String = "", status: FileStatus, url: String, headers: [(String, String)],
        fileHash: PartOrderedSHA256?, progress: (@Sendable (Int64) -> Void)?
    ) throws -> (etag: String, parts: Int) {
        let (size, count) = partLayout(fileSize: status.size)
        let resumed = try resumableUpload(url: url, status: status, partSize: size)
        var target = MultipartTarget(
            path: path, status: status, url: url, uploadQuery: "", partSize: size, count: count)
        target.key = key
        let (uploadID, uploadQuery) =
            try resumed.map { ($0.uploadID, $0.uploadQuery) } ?? createSweeping(target, headers: headers)
        target.uploadQuery = uploadQuery
        target.uploadID = uploadID
        target.stored = resumed?.stored ?? [:]
        if resumed == nil { journalUpload(target, uploadID: uploadID) }
        do {
            let parts = try sendParts(of: target, fileHash: fileHash, progress: progress)
            // The last part's read checked size and mtime; check once more before S3 assembles the object.
            if let now = try? FileStatus(path: path, followLinks: true), let change = now.change(since: status) {
                throw fail(
                    .changed,
                    "the file changed while it was being uploaded (\(change)); the multipart upload was aborted")
            }
            let etag = try completeMultipartUpload(target, parts: parts)
            forgetUpload()
            return (etag, count)
        } catch {
            // Stopped, or the network or server down: the next run resumes it (`S3MultipartResume`).
            if uploadJournal != nil, Self.keepsUpload(error) { throw Self.noting(error, " (the next run resumes it)") }
            let aborted = abort(url: url, uploadQuery: uploadQuery)
            forgetUpload()
            guard var failed = error as? ItemFailed else { throw error }
            if let index = failed.failures.indices.first {
                failed.failures[index].message += aborted
            }
            throw failed
        }
    }

    /// CreateMultipartUpload with its intent journaled first (`S3MultipartSweep`). A create that needed more than one
    /// attempt may have left uploads whose answers were lost: they are looked for and aborted, the one used kept. A
    /// create that failed for good is looked after too; when that cannot be done now, the journaled intent stays for
    /// the next run.
    private func createSweeping(_ target: MultipartTarget, headers: [(String, String)]) throws -> (String, String) {
        let intent = clock.date
        journalIntent(target)
        let created: (id: String, query: String, attempts: Int)
        do {
            created = try createMultipartUpload(url: target.url, headers: headers)
        } catch {
            if (try? sweepOpenUploads(url: target.url, key: target.key, from: intent, to: nil, keeping: nil)) != nil {
                forgetUpload()
            }
            throw error
        }
        if created.attempts > 1 {
            do {
                try sweepOpenUploads(url: target.url, key: target.key, from: intent, to: nil, keeping: created.id)
            } catch {
                let why = "the uploads a lost answer may have left open could not be listed: \(error)"
                logger?.warning("CreateMultipartUpload took \(created.attempts) attempts, and \(why)")
            }
        }
        return (created.id, created.query)
    }

    /// CreateMultipartUpload; returns the UploadId, the `uploadId=…` query the other requests of the upload carry,
    /// and the attempts it took.
    private func createMultipartUpload(url: String, headers: [(String, String)]) throws -> (String, String, Int) {
        var createHeaders = headers
        createHeaders += checksum.createHeaders
        let (created, createAttempts) = try send("POST", url + "?uploads", headers: createHeaders, body: .bytes([]))
        guard created.status == 200,
            let uploadID = XMLText.element("UploadId", in: created.bodyText), !uploadID.isEmpty
        else {
            if created.status == 200 {
                throw fail(.status, "CreateMultipartUpload \(Redaction.url(url)) answered without an UploadId")
            }
            throw refused("CreateMultipartUpload \(Redaction.url(url))", created, attempts: createAttempts)
        }
        return (uploadID, "uploadId=" + AWSURI.encode(uploadID), createAttempts)
    }

    /// Sends every part: `partConcurrency` threads take the parts in order, each reading, hashing and sending its
    /// part; the first failure stops them taking more and is thrown. Returns each part's ETag and checksum, in order.
    private func sendParts(
        of target: MultipartTarget, fileHash: PartOrderedSHA256?, progress: (@Sendable (Int64) -> Void)?
    )
        throws -> [(etag: String, checksum: String?)]
    {
        let parts = PartQueue(count: target.count)
        let sent = SentBytes()
        let sendPart: @Sendable (Int) throws -> (etag: String, checksum: String?) = { index in
            try self.uploadPart(
                index, of: target, fileHash: fileHash,
                progress: progress.map { report in { sent.set(index, $0, report: report) } })
        }
        let workers = min(partConcurrency, target.count)
        let finished = DispatchGroup()
        for _ in 0..<workers {
            finished.enter()
            let thread = Thread {
                defer { finished.leave() }
                while let index = parts.next() {
                    do {
                        parts.store(index, try sendPart(index))
                    } catch {
                        parts.fail(error)
                        fileHash?.giveUp()  // no thread may wait for this part's turn
                        return
                    }
                }
            }
            thread.name = "ingest-s3-part"
            thread.start()
        }
        finished.wait()
        if let error = parts.failure { throw error }
        return parts.results
    }

    /// Reads, hashes and sends part `index` (0-based) of a multipart upload; returns its ETag and checksum.
    private func uploadPart(
        _ index: Int, of target: MultipartTarget, fileHash: PartOrderedSHA256?, progress: ((Int64) -> Void)?
    ) throws -> (etag: String, checksum: String?) {
        if let cancellation, cancellation.isCancelled {
            throw ItemFailed.interrupted(
                stage: stage, reason: cancellation.reason,
                during: "the multipart upload of \(Redaction.url(target.url))")
        }
        let number = index + 1
        let slice = Self.partSlice(index, size: target.partSize, path: target.path, status: target.status)
        let sha256 = checksum == .sha256 || payloadSigning == .signed
        let stored = target.stored[number]
        let md5 = checksum == .md5 || stored != nil
        let digest =
            try fileHash?.inTurn(index) { feed in
                try hashSlice(slice, sha256: sha256, md5: md5, crc: checksum.crcKind, feed: feed)
            } ?? hashSlice(slice, sha256: sha256, md5: md5, crc: checksum.crcKind)
        if let kept = keptPart(stored, size: slice.size, digest: digest, progress: progress) { return kept }
        var partHeaders: [(String, String)] = []
        if checksum == .md5 { partHeaders.append(("Content-MD5", digest.md5Base64)) }
        let partChecksum = checksum.value(of: digest).map { alterChecksum?($0) ?? $0 }
        if let partChecksum, let name = checksum.headerName { partHeaders.append((name, partChecksum)) }
        let payload: SigV4Payload = payloadSigning == .signed ? .sha256(digest.sha256) : .unsigned
        let partURL = "\(target.url)?partNumber=\(number)&\(target.uploadQuery)"
        let (response, attempts) = try send(
            "PUT", partURL, headers: partHeaders, payload: payload, body: HTTPBody(file: slice),
            observer: progress.map { ProgressObserver($0) })
        let what = "UploadPart \(number) of \(target.count) for \(Redaction.url(target.url))"
        guard response.status == 200 else { throw refused(what, response, attempts: attempts) }
        let etag = try checkedETag(response, md5: checksum == .md5 ? digest.md5 : nil, what: what)
        if let partChecksum, let name = checksum.headerName {
            try confirmChecksum(returned: response.header(name), sent: partChecksum, what: what, quiet: true)
        }
        journalPart(number, of: target, etag: etag, checksum: partChecksum, size: slice.size)
        try afterPart?(number)
        return (etag, partChecksum)
    }

    /// CompleteMultipartUpload with every part's ETag (and SHA-256 checksum) in order; returns the object's ETag.
    private func completeMultipartUpload(_ target: MultipartTarget, parts: [(etag: String, checksum: String?)])
        throws -> String
    {
        var xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        for (offset, part) in parts.enumerated() {
            xml += "<Part><PartNumber>\(offset + 1)</PartNumber><ETag>\(XMLText.escaped(part.etag))</ETag>"
            if let sum = part.checksum { xml += "<\(checksum.completeElement)>\(sum)</\(checksum.completeElement)>" }
            xml += "</Part>"
        }
        xml += "</CompleteMultipartUpload>"
        let bytes = Array(xml.utf8)
        let whole = objectChecksum(parts: parts, partSize: target.partSize, fileSize: target.status.size)
        var headers = [("Content-Type", "application/xml")]
        if let whole, checksum.crcKind != nil, let name = checksum.headerName {
            headers += [(name, whole), ("x-amz-checksum-type", "FULL_OBJECT")]
        }
        let (response, attempts) = try send(
            "POST", "\(target.url)?\(target.uploadQuery)", headers: headers, payload: .hashing(bytes),
            body: .bytes(bytes))
        // S3 may answer 200 and still put an <Error> in the body (a failure after the headers went out).
        guard response.status == 200, !response.bodyText.contains("<Error>") else {
            throw refused("CompleteMultipartUpload \(Redaction.url(target.url))", response, attempts: attempts)
        }
        if let whole {
            try confirmChecksum(
                returned: XMLText.element(checksum.completeElement, in: response.bodyText),
                sent: whole, what: "CompleteMultipartUpload \(Redaction.url(target.url))")
        }
        let etag = XMLText.element("ETag", in: response.bodyText) ?? response.header("ETag") ?? ""
        return etag.trimmingCharacters(in: ["\""])
    }

    /// AbortMultipartUpload (S3 frees the stored parts); returns a note for the failure message.
    func abort(url: String, uploadQuery: String) -> String {
        do {
            let (response, _) = try send("DELETE", "\(url)?\(uploadQuery)", cancellable: false)
            if response.status == 204 || response.status == 200 || response.status == 404 {
                return " (multipart upload aborted)"
            }
            return " (aborting the multipart upload answered \(response.status): it may still hold parts)"
        } catch {
            return " (aborting the multipart upload failed: \(error))"
        }
    }
}
