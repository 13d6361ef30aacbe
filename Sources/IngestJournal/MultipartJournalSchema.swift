import Foundation
import IngestCore

/// The two tables, in either SQL dialect; created if missing each time a writer opens the journal, so a journal
/// written by an earlier ingest gains them and keeps everything else as it was.
package enum MultipartJournalSchema {
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

    /// `uploadColumns` and the row's time, as reads select them.
    static let selectedColumns = uploadColumns + ", updated_at"

    /// An upload from a row of `selectedColumns`, as text (PostgreSQL) or typed values (SQLite, turned to text).
    static func upload(row: [String?]) -> JournaledMultipartUpload? {
        guard row.count >= 11, let fileID = row[0].flatMap({ Int64($0) }), let position = row[1].flatMap({ Int($0) }),
            let partSize = row[6].flatMap({ Int64($0) }), let size = row[7].flatMap({ Int64($0) }),
            let modified = row[8].flatMap({ Int64($0) }), let inode = row[9].flatMap({ Int64($0) })
        else { return nil }
        var upload = JournaledMultipartUpload(
            fileID: fileID, position: position, url: row[2] ?? "", bucket: row[3] ?? "", key: row[4] ?? "",
            uploadID: row[5] ?? "", partSize: partSize, fileSize: size, modified: modified,
            inode: UInt64(bitPattern: inode), configHash: row[10] ?? "")
        upload.journaledAt = row.count > 11 ? row[11].flatMap { Int64($0) } ?? 0 : 0
        return upload
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
