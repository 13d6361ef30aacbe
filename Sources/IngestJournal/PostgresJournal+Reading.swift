import Foundation

/// Lookups of the shared journal.
extension PostgresJournal {
    package func knows(root: String) throws -> Bool {
        // Other workers add files at any moment: every file is looked up.
        true
    }

    package func record(root: String, relativePath: String) throws -> JournalRecord? {
        // Read with the file's lease, or with its batch when it needs none.
        if let known = aheadRecord(PostgresJournal.key(root, relativePath)) { return known }
        return try withConnection { connection in
            try connection.execute(
                "SELECT \(JournalSchema.recordColumns) FROM ingest_files WHERE root = $1 AND relative_path = $2",
                [root, relativePath]
            ).first.map(JournalRecord.init(row:))
        }
    }

    package func forEachRecord(_ body: (JournalRecord) throws -> Void) throws {
        var after: (String, String)?
        while true {
            // Pages in path order, so a journal of any size is walked in bounded memory.
            let page: [[String?]] = try withConnection { connection in
                try connection.execute(
                    """
                    SELECT \(JournalSchema.recordColumns) FROM ingest_files
                    WHERE $1::text IS NULL OR (root, relative_path) > ($1, $2)
                    ORDER BY root, relative_path LIMIT 1000
                    """, [after?.0, after?.1 ?? ""])
            }
            for row in page { try body(JournalRecord(row: row)) }
            guard page.count == 1000, let last = page.last else { return }
            after = (last[1] ?? "", last[2] ?? "")
        }
    }

    package func counts() throws -> [JournalState: Int] {
        try withConnection { connection in
            JournalRow.counts(try connection.execute("SELECT state, COUNT(*) FROM ingest_files GROUP BY state"))
        }
    }

    package func stages(fileID: Int64) throws -> [JournalStage] {
        try withConnection { connection in
            try connection.execute(
                """
                SELECT \(JournalStage.columns) FROM ingest_stages WHERE file_id = $1
                ORDER BY position
                """, [String(fileID)]
            ).map(JournalStage.init(row:))
        }
    }

    package func meta(_ key: String) throws -> String? {
        try withConnection { connection in
            try connection.execute("SELECT value FROM ingest_meta WHERE key = $1", [key]).first?.first ?? nil
        }
    }
}
