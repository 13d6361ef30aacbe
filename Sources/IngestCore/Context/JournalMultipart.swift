import Foundation

// The journal's record of S3 multipart uploads under way, so a run killed in the middle of one (kill -9, a lost
// network, Ctrl-C) resumes it: the next run asks S3 which parts it holds and sends only the others.

/// One multipart upload the journal keeps for the stage at `position` of the file `fileID`: where it goes, the
/// UploadId S3 handed out, how the file was cut, and the file as it was (size, mtime, inode) and the pipeline
/// (config hash) it was sent for. A change to any of them starts the upload over.
package struct JournaledMultipartUpload: Sendable, Equatable {
    package var fileID: Int64
    package var position: Int
    /// The object's URL, without query.
    package var url: String
    package var bucket: String
    package var key: String
    package var uploadID: String
    package var partSize: Int64
    package var fileSize: Int64
    package var modified: Int64
    package var inode: UInt64
    package var configHash: String
    /// The parts S3 confirmed, in part order.
    package var parts: [JournaledPart] = []
    /// When the row was written (seconds since 1970; 0 when unknown). For a row without an `uploadID` — a
    /// CreateMultipartUpload sent, its answer not journaled — this is when the create began.
    package var journaledAt: Int64 = 0

    /// True for the intent journaled before a CreateMultipartUpload whose answer the journal never got.
    package var isIntent: Bool { uploadID.isEmpty }

    package init(
        fileID: Int64, position: Int, url: String, bucket: String, key: String, uploadID: String, partSize: Int64,
        fileSize: Int64, modified: Int64, inode: UInt64, configHash: String, parts: [JournaledPart] = []
    ) {
        self.fileID = fileID
        self.position = position
        self.url = url
        self.bucket = bucket
        self.key = key
        self.uploadID = uploadID
        self.partSize = partSize
        self.fileSize = fileSize
        self.modified = modified
        self.inode = inode
        self.configHash = configHash
        self.parts = parts
    }

    /// Bytes of the file that the confirmed parts hold.
    package var storedBytes: Int64 { parts.reduce(0) { $0 + $1.size } }
}

/// One part S3 confirmed: its number (from 1), ETag, checksum (`x-amz-checksum-*`, base64) when one was sent, and
/// its size in bytes.
package struct JournaledPart: Sendable, Equatable {
    package var number: Int
    package var etag: String
    package var checksum: String?
    package var size: Int64

    package init(number: Int, etag: String, checksum: String?, size: Int64) {
        self.number = number
        self.etag = etag
        self.checksum = checksum
        self.size = size
    }
}

/// A journal that keeps multipart uploads (both backends). Every write commits before it returns: a part the journal
/// lists is one S3 confirmed.
package protocol MultipartJournal: Sendable {
    /// The upload journaled for the stage at `position` of file `fileID`, with its parts; nil when none.
    func multipartUpload(fileID: Int64, position: Int) throws -> JournaledMultipartUpload?
    /// Journals a new upload (replacing any earlier one of the stage, and its parts).
    func beginMultipartUpload(_ upload: JournaledMultipartUpload) throws
    /// Journals a part S3 confirmed for the upload `uploadID`.
    func multipartPartStored(fileID: Int64, position: Int, uploadID: String, part: JournaledPart) throws
    /// Forgets the stage's upload: completed, aborted, or gone.
    func endMultipartUpload(fileID: Int64, position: Int) throws
    /// Every upload under way, parts included: what `ingest status` shows as resumable.
    func multipartUploads() throws -> [JournaledMultipartUpload]
}

/// What an upload stage may keep in the journal about its own transfer, for the file and stage it runs for: the
/// runner hands it over in `StageContext.uploadJournal` when the run has a journal that keeps multipart uploads.
package struct UploadJournal: Sendable {
    package let store: any MultipartJournal
    package let fileID: Int64
    package let position: Int
    /// The pipeline's hash: an upload begun for another pipeline is not resumed.
    package let configHash: String

    package init(store: any MultipartJournal, fileID: Int64, position: Int, configHash: String) {
        self.store = store
        self.fileID = fileID
        self.position = position
        self.configHash = configHash
    }
}
