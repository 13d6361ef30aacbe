import Foundation
import NativeSQLite

/// Lookups of the SQLite journal, on the pooled read connections (WAL readers do not block the writer).
extension SQLiteJournal {
    /// The record of one file, or nil when the journal has never seen it.
    package func record(root: String, relativePath: String) throws -> JournalRecord? {
        try read { reader in
            let rows = try reader.statement(SQLiteJournal.recordSQL).rows([.text(root), .text(relativePath)])
            return rows.first.map(JournalRecord.init(row:))
        }
    }

    /// Built once: the statement cache is keyed by the SQL, made and hashed anew for each file otherwise.
    static let recordSQL = "SELECT \(JournalSchema.recordColumns) FROM files WHERE root = ?1 AND relative_path = ?2"

    /// True when the journal holds any file under `root` (a new batch needs no lookup per file).
    package func knows(root: String) throws -> Bool {
        try read { reader in
            try !reader.statement("SELECT 1 FROM files WHERE root = ?1 LIMIT 1").rows([.text(root)]).isEmpty
        }
    }

    /// Every record in path order, one at a time (a journal of any size).
    package func forEachRecord(_ body: (JournalRecord) throws -> Void) throws {
        // A separate statement so the walk does not hold the lock the run's statements need.
        let rows: Statement
        do {
            rows = try batches.database.prepare(
                "SELECT \(JournalSchema.recordColumns) FROM files ORDER BY root, relative_path")
        } catch {
            throw JournalError("journal \(path): \(error.message)")
        }
        do {
            try rows.forEachRow { try body(JournalRecord(row: $0)) }
        } catch let error as SQLiteError {
            throw JournalError("journal \(path): \(error.message)")
        }
    }

    /// Files per state.
    package func counts() throws -> [JournalState: Int] {
        try read { reader in
            JournalRow.counts(try reader.statement("SELECT state, COUNT(*) FROM files GROUP BY state").rows())
        }
    }

    /// The stages journaled for one file, in pipeline order.
    package func stages(fileID: Int64) throws -> [JournalStage] {
        try read { reader in
            try reader.statement(
                "SELECT \(JournalStage.columns) FROM stages WHERE file_id = ?1 ORDER BY position"
            ).rows([.integer(fileID)]).map(JournalStage.init(row:))
        }
    }

    /// A value the journal keeps beside the files (`pipeline`: the name of the last pipeline run).
    package func meta(_ key: String) throws -> String? {
        try read { reader in
            try reader.statement("SELECT value FROM meta WHERE key = ?1").rows([.text(key)]).first?.first?.string
        }
    }
}
