import Foundation
import IngestCore
import NativeSystem

/// Resuming a multipart upload across runs. The journal keeps the upload (UploadId, part size, the file's size,
/// mtime and inode, the pipeline) and each part as S3 confirms it. The next run asks S3 which parts it holds
/// (ListParts, paged), keeps those whose ETag (the part's MD5, without SSE-KMS) or checksum matches the part read
/// from disk now, sends the others and completes. A changed file, part size, pipeline or URL starts over and aborts
/// the old upload; `NoSuchUpload` (aborted, or expired by a lifecycle rule) starts over.
extension S3Uploader {
    /// A part S3 holds for the upload being resumed: what ListParts said of it, and what the journal kept.
    struct StoredPart: Sendable {
        var number: Int
        var etag: String
        var size: Int64
        var checksumSHA256: String?
        var journaled: JournaledPart?
    }

    /// An upload taken up again: its `uploadId=…` query and the parts S3 holds, by part number.
    struct ResumedUpload: Sendable {
        var uploadID: String
        var uploadQuery: String
        var stored: [Int: StoredPart]
    }

    /// This uploader keeping its multipart uploads in `journal` (nil: none is kept, a failed one is aborted).
    package func resuming(_ journal: UploadJournal?) -> S3Uploader {
        var uploader = self
        uploader.uploadJournal = journal
        return uploader
    }

    /// The journaled upload of this stage, when it can go on: same URL, part size, file and pipeline, and S3 still
    /// has it. A stale one is aborted and forgotten; nil then, and when there is none.
    func resumableUpload(url: String, status: FileStatus, partSize: Int64) throws -> ResumedUpload? {
        guard let journal = uploadJournal,
            let old = try? journal.store.multipartUpload(fileID: journal.fileID, position: journal.position)
        else { return nil }
        if old.isIntent {
            try sweepAfterInterruptedCreate(old)
            return nil
        }
        let query = "uploadId=" + AWSURI.encode(old.uploadID)
        if let reason = Self.staleReason(old, url: url, status: status, partSize: partSize, journal: journal) {
            let aborted = abort(url: old.url, uploadQuery: query)
            forgetUpload()
            logger?.info("multipart upload \(old.uploadID) not resumed: \(reason)\(aborted)")
            return nil
        }
        guard let listed = try listParts(url: url, uploadQuery: query) else {
            forgetUpload()
            logger?.info("multipart upload \(old.uploadID) is gone (NoSuchUpload): starting over")
            return nil
        }
        var stored: [Int: StoredPart] = [:]
        let journaled = Dictionary(old.parts.map { ($0.number, $0) }, uniquingKeysWith: { $1 })
        for var part in listed {
            part.journaled = journaled[part.number]
            stored[part.number] = part
        }
        logger?.info("resuming multipart upload \(old.uploadID): S3 holds \(stored.count) parts")
        return ResumedUpload(uploadID: old.uploadID, uploadQuery: query, stored: stored)
    }

    /// A create journaled as sent whose answer the journal never got (the run died around it, or its failure could
    /// not be looked after then): the uploads it may have made are aborted, and the intent forgotten. A listing that
    /// fails for a passing reason (network, 5xx) fails the file so a later run looks again; one S3 refuses (no
    /// permission to list uploads) is logged and the file goes on.
    func sweepAfterInterruptedCreate(_ intent: JournaledMultipartUpload) throws {
        let began = Date(timeIntervalSince1970: TimeInterval(intent.journaledAt))
        do {
            let aborted = try sweepOpenUploads(
                url: intent.url, key: intent.key, from: began, to: createDeadline(after: began), keeping: nil)
            logger?.info("a CreateMultipartUpload cut short by an earlier run left \(aborted) open upload(s): aborted")
        } catch {
            if Self.keepsUpload(error) {
                throw Self.noting(
                    error, " (looking for an upload an interrupted create may have left; the next run looks again)")
            }
            logger?.warning(
                "the uploads an interrupted CreateMultipartUpload may have left could not be listed: \(error)")
        }
        forgetUpload()
    }

    /// Why the journaled upload cannot be resumed, or nil when it can.
    static func staleReason(
        _ old: JournaledMultipartUpload, url: String, status: FileStatus, partSize: Int64, journal: UploadJournal
    ) -> String? {
        if old.url != url { return "it went to another object" }
        if old.fileSize != status.size || old.modified != status.modified || old.inode != status.inode {
            return "the file changed since it began"
        }
        if old.partSize != partSize { return "the part size changed (\(old.partSize) → \(partSize) bytes)" }
        if old.configHash != journal.configHash { return "the pipeline changed" }
        return nil
    }

    /// Journals a new upload (its parts follow as S3 confirms them). A journal that cannot record it only costs a
    /// later resume: the upload goes on.
    func journalUpload(_ target: MultipartTarget, uploadID: String) {
        guard let journal = uploadJournal else { return }
        let upload = JournaledMultipartUpload(
            fileID: journal.fileID, position: journal.position, url: target.url, bucket: bucket,
            key: target.key, uploadID: uploadID, partSize: target.partSize, fileSize: target.status.size,
            modified: target.status.modified, inode: target.status.inode, configHash: journal.configHash)
        do {
            try journal.store.beginMultipartUpload(upload)
        } catch {
            logger?.warning("the multipart upload could not be journaled (a restart sends it anew): \(error)")
        }
    }

    /// Journals a part S3 confirmed.
    func journalPart(_ number: Int, of target: MultipartTarget, etag: String, checksum: String?, size: Int64) {
        guard let journal = uploadJournal, let uploadID = target.uploadID else { return }
        do {
            try journal.store.multipartPartStored(
                fileID: journal.fileID, position: journal.position, uploadID: uploadID,
                part: JournaledPart(number: number, etag: etag, checksum: checksum, size: size))
        } catch {
            logger?.warning("part \(number) could not be journaled (ListParts still finds it): \(error)")
        }
    }

    /// Forgets the stage's journaled upload (completed, aborted or gone).
    func forgetUpload() {
        guard let journal = uploadJournal else { return }
        try? journal.store.endMultipartUpload(fileID: journal.fileID, position: journal.position)
    }

    /// True when S3's stored part can stand for the part read from disk now: the same size, and its ETag is the
    /// part's MD5 — or, where the ETag is no MD5 (SSE-KMS, SSE-C), the journaled ETag and SHA-256 checksum match.
    static func storedPartMatches(_ stored: StoredPart, size: Int64, md5: [UInt8], sha256Base64: String?) -> Bool {
        guard stored.size == size else { return false }
        if let listed = stored.checksumSHA256, let local = sha256Base64, listed != local { return false }
        let bare = stored.etag.trimmingCharacters(in: CharacterSet(charactersIn: "\" ")).lowercased()
        if bare.count == 32, bare.allSatisfy(\.isHexDigit) { return bare == md5.hexString }
        guard let journaled = stored.journaled, let local = sha256Base64,
            journaled.etag.trimmingCharacters(in: CharacterSet(charactersIn: "\" ")).lowercased() == bare
        else { return false }
        return journaled.checksum == local
    }

    /// True when a failure leaves the upload worth resuming (the run was stopped, the network or the server was
    /// down for a while): it stays journaled and open. Any other failure ends it.
    static func keepsUpload(_ error: Error) -> Bool {
        guard let failed = error as? ItemFailed else { return false }
        let passing: Set<RuleName> = [.interrupted, .cancelled, .network, .dns, .timeout, .refused, .tls]
        return failed.failures.contains { failure in
            if passing.contains(failure.rule) { return true }
            guard failure.rule == .status, let code = failure.actual.flatMap({ Int($0) }) else { return false }
            return code >= 500 || code == 429 || code == 408
        }
    }

    /// The ETag and checksum of a part S3 already holds when it matches the part on disk (`digest`); nil to send it.
    func keptPart(_ stored: StoredPart?, size: Int64, digest: SliceDigest, progress: ((Int64) -> Void)?)
        -> (etag: String, checksum: String?)?
    {
        guard let stored else { return nil }
        let sum = checksum == .sha256 ? digest.sha256Base64 : nil
        guard Self.storedPartMatches(stored, size: size, md5: digest.md5, sha256Base64: sum) else {
            logger?.info("part \(stored.number) differs from the part S3 holds: sending it again")
            return nil
        }
        progress?(size)
        return (stored.etag, sum)
    }

    /// `error` with `note` added to its first failure's message.
    static func noting(_ error: Error, _ note: String) -> Error {
        guard var failed = error as? ItemFailed, let index = failed.failures.indices.first else { return error }
        failed.failures[index].message += note
        return failed
    }
}
