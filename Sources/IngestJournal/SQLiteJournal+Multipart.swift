import Foundation
import IngestCore
import NativeSQLite

/// Multipart uploads under way, in the SQLite journal (`multipart_uploads`, `multipart_parts`). Each write is a
/// barrier: committed before S3 is sent anything that relies on it.
extension SQLiteJournal: MultipartJournal {
    /// Adds the tables to a journal that lacks them (one written by an earlier ingest); called by a writer on open.
    func addMultipartTables() throws {
        try batches.write(barrier: true) {
            try batches.database.execute(MultipartJournalSchema.script(prefix: "", int64: "INTEGER"))
        }
    }

    package func multipartUpload(fileID: Int64, position: Int) throws -> JournaledMultipartUpload? {
        try multipartUploads(where: "file_id = ?1 AND position = ?2", [.integer(fileID), .integer(Int64(position))])
            .first
    }

    package func multipartUploads() throws -> [JournaledMultipartUpload] {
        try multipartUploads(where: "1 = 1", [])
    }

    private func multipartUploads(where condition: String, _ values: [SQLiteValue]) throws
        -> [JournaledMultipartUpload]
    {
        try read { reader in
            // A journal that no writer of this version opened yet has no such table: nothing is under way.
            let known = try reader.statement(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'multipart_parts'"
            ).rows()
            guard !known.isEmpty else { return [] }
            let uploads = try reader.statement(
                "SELECT \(MultipartJournalSchema.selectedColumns) FROM multipart_uploads WHERE \(condition)"
            ).rows(values).compactMap { MultipartJournalSchema.upload(row: $0.map(\.string)) }
            let parts = try reader.statement(
                "SELECT file_id, position, upload_id, number, etag, checksum, size FROM multipart_parts WHERE "
                    + condition
            ).rows(values).compactMap { MultipartJournalSchema.part(row: $0.map(\.string)) }
            return MultipartJournalSchema.attach(parts, to: uploads)
        }
    }

    package func beginMultipartUpload(_ upload: JournaledMultipartUpload) throws {
        let key: [SQLiteValue] = [.integer(upload.fileID), .integer(Int64(upload.position))]
        try batches.write(barrier: true) {
            try batches.statement("DELETE FROM multipart_parts WHERE file_id = ?1 AND position = ?2").run(key)
            try batches.statement(
                """
                INSERT OR REPLACE INTO multipart_uploads(\(MultipartJournalSchema.uploadColumns), updated_at)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
                """
            ).run(
                key + [
                    .text(upload.url), .text(upload.bucket), .text(upload.key), .text(upload.uploadID),
                    .integer(upload.partSize), .integer(upload.fileSize), .integer(upload.modified),
                    .integer(Int64(bitPattern: upload.inode)), .text(upload.configHash), .integer(rowTime),
                ])
        }
    }

    package func multipartPartStored(fileID: Int64, position: Int, uploadID: String, part: JournaledPart) throws {
        try batches.write(barrier: true) {
            try batches.statement(
                """
                INSERT OR REPLACE INTO multipart_parts(file_id, position, upload_id, number, etag, checksum, size)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                """
            ).run([
                .integer(fileID), .integer(Int64(position)), .text(uploadID), .integer(Int64(part.number)),
                .text(part.etag), part.checksum.map { .text($0) } ?? .null, .integer(part.size),
            ])
        }
    }

    package func endMultipartUpload(fileID: Int64, position: Int) throws {
        let key: [SQLiteValue] = [.integer(fileID), .integer(Int64(position))]
        try batches.write(barrier: true) {
            try batches.statement("DELETE FROM multipart_parts WHERE file_id = ?1 AND position = ?2").run(key)
            try batches.statement("DELETE FROM multipart_uploads WHERE file_id = ?1 AND position = ?2").run(key)
        }
    }
}
