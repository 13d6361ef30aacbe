import Foundation

// The journal's record of S3 multipart uploads under way, so a run killed in the middle of one (kill -9, a lost
// network, Ctrl-C) resumes it: the next run asks S3 which parts it holds and sends only the others.

/// One multipart upload the journal keeps for the stage at `position` of the file `fileID`: where it goes, the
/// UploadId S3 handed out, how the file was cut, and the file as it was (size, mtime, inode) and the pipeline
/// (config hash) it was sent for. A change to any of them starts the upload over.
public struct JournaledMultipartUpload: Sendable, Equatable {
    public var fileID: Int64
    public var position: Int
    /// The object's URL, without query.
    public var url: String
    public var bucket: String
    public var key: String
    public var uploadID: String
    public var partSize: Int64
    public var fileSize: Int64
    public var modified: Int64
    public var inode: UInt64
    public var configHash: String
    /// The parts S3 confirmed, in part order.
    public var parts: [JournaledPart] = []

    /// Bytes of the file that the confirmed parts hold.
    public var storedBytes: Int64 { parts.reduce(0) { $0 + $1.size } }
}

/// One part S3 confirmed: its number (from 1), ETag, checksum (`x-amz-checksum-*`, base64) when one was sent, and
/// its size in bytes.
public struct JournaledPart: Sendable, Equatable {
    public var number: Int
    public var etag: String
    public var checksum: String?
    public var size: Int64

    public init(number: Int, etag: String, checksum: String?, size: Int64) {
        self.number = number
        self.etag = etag
        self.checksum = checksum
        self.size = size
    }
}

/// A journal that keeps multipart uploads (both backends). Every write commits before it returns: a part the journal
/// lists is one S3 confirmed.
public protocol MultipartJournal: Sendable {
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

/// The two tables, in either SQL dialect; created if missing each time a writer opens the journal, so a journal
/// written by an earlier ingest gains them and keeps everything else as it was.
enum MultipartJournalSchema {
    static func script(prefix p: String, int64: String) -> String {
        """
        CREATE TABLE IF NOT EXISTS \(p)multipart_uploads(
            file_id \(int64) NOT NULL,
            position INTEGER NOT NULL,
            url TEXT NOT NULL, bucket TEXT NOT NULL, object_key TEXT NOT NULL, upload_id TEXT NOT NULL,
            part_size \(int64) NOT NULL, size \(int64) NOT NULL, mtime_ns \(int64) NOT NULL, inode \(int64) NOT NULL,
            config_hash TEXT NOT NULL,
            updated_at \(int64) NOT NULL,
            PRIMARY KEY(file_id, position));
        CREATE TABLE IF NOT EXISTS \(p)multipart_parts(
            file_id \(int64) NOT NULL,
            position INTEGER NOT NULL,
            upload_id TEXT NOT NULL,
            number INTEGER NOT NULL,
            etag TEXT NOT NULL, checksum TEXT, size \(int64) NOT NULL,
            PRIMARY KEY(file_id, position, number));
        """
    }

    /// The upload's columns in the order `upload(row:)` reads them.
    static let uploadColumns =
        "file_id, position, url, bucket, object_key, upload_id, part_size, size, mtime_ns, inode, config_hash"

    /// An upload from a row of `uploadColumns`, as text (PostgreSQL) or typed values (SQLite, turned to text).
    static func upload(row: [String?]) -> JournaledMultipartUpload? {
        guard row.count >= 11, let fileID = row[0].flatMap({ Int64($0) }), let position = row[1].flatMap({ Int($0) }),
            let partSize = row[6].flatMap({ Int64($0) }), let size = row[7].flatMap({ Int64($0) }),
            let modified = row[8].flatMap({ Int64($0) }), let inode = row[9].flatMap({ Int64($0) })
        else { return nil }
        return JournaledMultipartUpload(
            fileID: fileID, position: position, url: row[2] ?? "", bucket: row[3] ?? "", key: row[4] ?? "",
            uploadID: row[5] ?? "", partSize: partSize, fileSize: size, modified: modified,
            inode: UInt64(bitPattern: inode), configHash: row[10] ?? "")
    }

    /// A part from a row of `file_id, position, upload_id, number, etag, checksum, size`.
    static func part(row: [String?]) -> (key: String, part: JournaledPart)? {
        guard row.count >= 7, let number = row[3].flatMap({ Int($0) }), let size = row[6].flatMap({ Int64($0) })
        else { return nil }
        let key = "\(row[0] ?? "")/\(row[1] ?? "")/\(row[2] ?? "")"
        return (key, JournaledPart(number: number, etag: row[4] ?? "", checksum: row[5], size: size))
    }

    /// Attaches `parts` (keyed `file/position/upload`) to their uploads, in part order.
    static func attach(_ parts: [(key: String, part: JournaledPart)], to uploads: [JournaledMultipartUpload])
        -> [JournaledMultipartUpload]
    {
        var byKey: [String: [JournaledPart]] = [:]
        for (key, part) in parts { byKey[key, default: []].append(part) }
        return uploads.map { upload in
            var upload = upload
            upload.parts = (byKey["\(upload.fileID)/\(upload.position)/\(upload.uploadID)"] ?? []).sorted {
                $0.number < $1.number
            }
            return upload
        }
    }
}

/// What an upload stage may keep in the journal about its own transfer, for the file and stage it runs for: the
/// runner hands it over in `StageContext.uploadJournal` when the run has a journal that keeps multipart uploads.
public struct UploadJournal: Sendable {
    public let store: any MultipartJournal
    public let fileID: Int64
    public let position: Int
    /// The pipeline's hash: an upload begun for another pipeline is not resumed.
    public let configHash: String
}
