import Foundation
import IngestCore
import NativePostgres

/// Multipart uploads under way, in the shared PostgreSQL journal (`ingest_multipart_uploads`,
/// `ingest_multipart_parts`). Each write commits before it returns. A worker that takes over a file another worker
/// left (its lease expired) resumes that worker's upload.
extension PostgresJournal: MultipartJournal {
    /// Adds the tables to a database that lacks them (one written by an earlier ingest); called by a writer on open.
    func addMultipartTables(_ connection: PostgresConnection) throws {
        try connection.run(
            script: "BEGIN;\nSELECT pg_advisory_xact_lock(7238190043);\n"
                + MultipartJournalSchema.script(prefix: "ingest_", int64: "BIGINT") + "\nCOMMIT;")
    }

    package func multipartUpload(fileID: Int64, position: Int) throws -> JournaledMultipartUpload? {
        try multipartUploads(where: "file_id = $1 AND position = $2", [String(fileID), String(position)]).first
    }

    package func multipartUploads() throws -> [JournaledMultipartUpload] {
        try multipartUploads(where: "TRUE", [])
    }

    private func multipartUploads(where condition: String, _ values: [String?]) throws -> [JournaledMultipartUpload] {
        try withConnection { connection in
            // A database no writer of this version opened yet has no such table: nothing is under way.
            let known = try connection.execute("SELECT to_regclass('ingest_multipart_parts')").first?.first ?? nil
            guard known != nil else { return [] }
            let uploads = try connection.execute(
                "SELECT \(MultipartJournalSchema.selectedColumns) FROM ingest_multipart_uploads WHERE \(condition)",
                values
            ).compactMap(MultipartJournalSchema.upload(row:))
            let parts = try connection.execute(
                "SELECT file_id, position, upload_id, number, etag, checksum, size FROM ingest_multipart_parts "
                    + "WHERE \(condition)", values
            ).compactMap(MultipartJournalSchema.part(row:))
            return MultipartJournalSchema.attach(parts, to: uploads)
        }
    }

    package func beginMultipartUpload(_ upload: JournaledMultipartUpload) throws {
        let key = [String(upload.fileID), String(upload.position)]
        try transaction { connection in
            _ = try connection.execute(
                "DELETE FROM ingest_multipart_parts WHERE file_id = $1 AND position = $2", key)
            _ = try connection.execute(
                """
                INSERT INTO ingest_multipart_uploads(\(MultipartJournalSchema.uploadColumns), updated_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
                ON CONFLICT (file_id, position) DO UPDATE SET url = $3, bucket = $4, object_key = $5,
                    upload_id = $6, part_size = $7, size = $8, mtime_ns = $9, inode = $10, config_hash = $11,
                    updated_at = $12
                """,
                key + [
                    upload.url, upload.bucket, upload.key, upload.uploadID, String(upload.partSize),
                    String(upload.fileSize), String(upload.modified), String(Int64(bitPattern: upload.inode)),
                    upload.configHash, String(rowTime),
                ])
        }
    }

    package func multipartPartStored(fileID: Int64, position: Int, uploadID: String, part: JournaledPart) throws {
        try withConnection { connection in
            _ = try connection.execute(
                """
                INSERT INTO ingest_multipart_parts(file_id, position, upload_id, number, etag, checksum, size)
                VALUES ($1, $2, $3, $4, $5, $6, $7)
                ON CONFLICT (file_id, position, number) DO UPDATE SET upload_id = $3, etag = $5, checksum = $6,
                    size = $7
                """,
                [
                    String(fileID), String(position), uploadID, String(part.number), part.etag, part.checksum,
                    String(part.size),
                ])
        }
    }

    package func endMultipartUpload(fileID: Int64, position: Int) throws {
        let key = [String(fileID), String(position)]
        try transaction { connection in
            _ = try connection.execute(
                "DELETE FROM ingest_multipart_parts WHERE file_id = $1 AND position = $2", key)
            _ = try connection.execute(
                "DELETE FROM ingest_multipart_uploads WHERE file_id = $1 AND position = $2", key)
        }
    }
}
