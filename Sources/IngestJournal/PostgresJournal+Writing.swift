import Foundation
import IngestCore

/// The shared journal's writes: each one commits before it returns (the database is the queue), the statements of
/// one write sent together in one pipeline — one round trip, one transaction.
extension PostgresJournal {
    package func setMeta(_ key: String, _ value: String) throws {
        try withConnection { connection in
            try connection.execute(
                "INSERT INTO ingest_meta(key, value) VALUES ($1, $2) ON CONFLICT(key) DO UPDATE SET value = $2",
                [key, value])
        }
    }

    package func commit() throws {}

    /// Claims `key` for a file this worker holds the lease on. A claim made by another worker stands while that
    /// worker's lease on its file lives: two copies of one content started at the same moment on two machines
    /// cannot both pass (the INSERT … ON CONFLICT is one atomic step in PostgreSQL), and a claim whose worker
    /// stopped is taken over with its lease. Done files, and files that failed after a request went out, hold
    /// their keys in `ingest_files` for good.
    package func claim(
        key: String, root: String, relativePath: String, path: String, excluding existingID: Int64?
    ) throws -> String? {
        stateLock.lock()
        if let holder = claims[key] {
            stateLock.unlock()
            return holder == path ? nil : holder
        }
        stateLock.unlock()
        let holder = try withConnection { connection -> String? in
            let durable =
                try connection.execute(
                    """
                    SELECT path FROM ingest_files WHERE dedupe_key = $1 AND id != $2
                        AND (state = 'done' OR side_effects = 1) LIMIT 1
                    """, [key, String(existingID ?? -1)]
                ).first?.first ?? nil
            if let durable { return durable }
            let taken = try connection.execute(
                """
                INSERT INTO ingest_claims(dedupe_key, root, relative_path, path, owner) VALUES ($1, $2, $3, $4, $5)
                ON CONFLICT (dedupe_key) DO UPDATE SET root = $2, relative_path = $3, path = $4, owner = $5
                WHERE (ingest_claims.root = $2 AND ingest_claims.relative_path = $3)
                    OR NOT EXISTS (
                        SELECT 1 FROM ingest_leases AS lease
                        WHERE lease.root = ingest_claims.root AND lease.relative_path = ingest_claims.relative_path
                            AND lease.owner = ingest_claims.owner AND lease.expires_at > now())
                RETURNING path
                """, [key, root, relativePath, path, owner])
            if !taken.isEmpty { return nil }
            return try connection.execute("SELECT path FROM ingest_claims WHERE dedupe_key = $1", [key])
                .first?.first ?? "a file another worker is ingesting"
        }
        if let holder { return holder }
        stateLock.lock()
        defer { stateLock.unlock() }
        if let holder = claims[key], holder != path { return holder }
        claims[key] = path
        return nil
    }

    package func release(key: String) {
        stateLock.lock()
        let path = claims.removeValue(forKey: key)
        stateLock.unlock()
        // The file failed before anything left the machine: another copy may go ahead at once.
        if let path {
            _ = try? withConnection { connection in
                try connection.execute(
                    "DELETE FROM ingest_claims WHERE dedupe_key = $1 AND path = $2 AND owner = $3", [key, path, owner])
            }
        }
    }

    /// The statement that writes the file's row from `start` (inserted, or updated in place) and returns its id.
    func upsert(
        _ start: JournalStart, state: JournalState, countAttempt: Bool, failures: String? = nil,
        reason: String? = nil, facts: String? = nil
    ) -> (sql: String, parameters: [String?]) {
        let values: [String?] = [
            start.root, start.relativePath, start.path, String(start.size), String(start.modified),
            String(Int64(bitPattern: start.inode)), start.sha256, start.pipeline, start.configHash,
            JournalRow.json(start.templateValues), state == .failed ? nil : start.dedupeKey, runID,
            String(rowTime),
            start.keepStages ? "1" : "0", state.rawValue, countAttempt ? "1" : "0", failures, reason, facts,
        ]
        let sql = """
            INSERT INTO ingest_files(root, relative_path, path, size, mtime_ns, inode, sha256, pipeline, config_hash,
                state, attempts, template_values, dedupe_key, run_id, updated_at, failures, reason, facts)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $15, 1, $10, $11, $12, $13, $17, $18, $19)
            ON CONFLICT(root, relative_path) DO UPDATE SET path = $3, size = $4, mtime_ns = $5, inode = $6,
                sha256 = $7, pipeline = $8, config_hash = $9, state = $15,
                attempts = ingest_files.attempts + $16::integer, failures = $17, reason = $18, facts = $19,
                template_values = $10, dedupe_key = $11, duplicate_of = NULL,
                side_effects = CASE WHEN $14::integer = 1 THEN ingest_files.side_effects ELSE 0 END, run_id = $12,
                updated_at = $13
            RETURNING id
            """
        return (sql, values)
    }

    /// The file's row written from `start` and, for a file that starts afresh, its old stage rows deleted: the
    /// statements, to send in one pipeline (the delete finds the row by its path, so it needs no id first).
    func writeRow(
        _ start: JournalStart, state: JournalState, failures: String? = nil, reason: String? = nil,
        facts: String? = nil
    ) -> [(sql: String, parameters: [String?])] {
        var statements = [
            upsert(start, state: state, countAttempt: true, failures: failures, reason: reason, facts: facts)
        ]
        if !start.keepStages, start.existingID != nil {
            statements.append(
                (
                    """
                    DELETE FROM ingest_stages WHERE file_id =
                        (SELECT id FROM ingest_files WHERE root = $1 AND relative_path = $2)
                    """, [start.root, start.relativePath]
                ))
        }
        return statements
    }

    static func id(_ answers: [[[String?]]]) -> Int64 { Int64(answers.first?.first?.first.flatMap { $0 } ?? "") ?? 0 }

    package func begin(_ start: JournalStart) throws -> Int64 {
        try withConnection { connection in
            PostgresJournal.id(try connection.pipeline(writeRow(start, state: .running)))
        }
    }

    /// The row and its first network stage as started, one pipeline: one round trip, one commit.
    package func begin(_ start: JournalStart, stageAt position: Int, name: String) throws -> Int64 {
        let started = stageStartedSQL(
            file: (
                "(SELECT id FROM ingest_files WHERE root = $1 AND relative_path = $2)",
                [start.root, start.relativePath]
            ),
            position: position, name: name, barrier: true)
        return try withConnection { connection in
            PostgresJournal.id(try connection.pipeline(writeRow(start, state: .running) + started))
        }
    }

    package func finish(
        _ start: JournalStart, id: Int64?, state: JournalState, failures: [RuleFailure], reason: String?,
        facts: JSONObject
    ) throws {
        releaseKey(of: start, id: id, state: state)
        let failureText = JournalRow.json(failures)
        let factsText = JournalRow.json(facts)
        let leased = takeHeld(start.root, start.relativePath)
        _ = aheadRecord(PostgresJournal.key(start.root, start.relativePath))
        var statements: [(sql: String, parameters: [String?])]
        if let id {
            statements = [
                (
                    """
                    UPDATE ingest_files SET state = $2, failures = $3, reason = $4, facts = $5,
                        sha256 = COALESCE($6, sha256),
                        dedupe_key = CASE WHEN $2 = 'failed' AND side_effects = 0 THEN NULL ELSE dedupe_key END,
                        template_values = $8, updated_at = $7
                    WHERE id = $1
                    """,
                    [
                        String(id), state.rawValue, failureText, reason, factsText, start.sha256,
                        String(rowTime), JournalRow.json(start.templateValues),
                    ]
                )
            ]
        } else {
            statements = writeRow(start, state: state, failures: failureText, reason: reason, facts: factsText)
        }
        // The result and the end of the lease commit together: no other worker takes an unrecorded file.
        if leased { statements.append((PostgresJournal.releaseSQL, [start.root, start.relativePath, owner])) }
        try withConnection { connection in _ = try connection.pipeline(statements) }
    }

    package func stageStarted(fileID: Int64, position: Int, name: String, barrier: Bool) throws {
        let statements = stageStartedSQL(
            file: ("$1::bigint", [String(fileID)]), position: position, name: name, barrier: barrier)
        try withConnection { connection in _ = try connection.pipeline(statements) }
    }

    /// The statements that journal a stage as started, for the file `file` names: SQL giving its id (a parameter or
    /// a subquery) with the parameters that SQL uses, numbered from `$1`.
    func stageStartedSQL(
        file: (sql: String, parameters: [String?]), position: Int, name: String, barrier: Bool
    ) -> [(sql: String, parameters: [String?])] {
        let next = file.parameters.count
        var statements: [(sql: String, parameters: [String?])] = [
            (
                """
                INSERT INTO ingest_stages(file_id, position, name, status, attempts, updated_at)
                VALUES (\(file.sql), $\(next + 1), $\(next + 2), 'started', 1, $\(next + 3))
                ON CONFLICT(file_id, position) DO UPDATE SET name = $\(next + 2), status = 'started',
                    attempts = ingest_stages.attempts + 1, outputs = NULL, error = NULL, updated_at = $\(next + 3)
                """, file.parameters + [String(position), name, String(rowTime)]
            )
        ]
        if barrier {
            statements.append(("UPDATE ingest_files SET side_effects = 1 WHERE id = \(file.sql)", file.parameters))
        }
        return statements
    }

    package func stageFinished(
        fileID: Int64, position: Int, name: String, status: JournalStage.Status, outputs: JSONObject,
        error: String?, barrier: Bool
    ) throws {
        try withConnection { connection in
            try connection.execute(
                """
                INSERT INTO ingest_stages(file_id, position, name, status, attempts, outputs, error, updated_at)
                VALUES ($1, $2, $3, $4, 1, $5, $6, $7)
                ON CONFLICT(file_id, position) DO UPDATE SET name = $3, status = $4, outputs = $5, error = $6,
                    updated_at = $7
                """,
                [
                    String(fileID), String(position), name, status.rawValue, JournalRow.json(outputs), error,
                    String(rowTime),
                ])
        }
    }

    package func recordWithoutWork(
        root: String, relativePath: String, path: String, pipeline: String, configHash: String, state: JournalState,
        failures: [RuleFailure] = [], reason: String? = nil, duplicateOf: String? = nil,
        templateValues: JSONObject = [:]
    ) throws {
        let failureText = JournalRow.json(failures)
        try withConnection { connection in
            try connection.execute(
                """
                INSERT INTO ingest_files(root, relative_path, path, pipeline, config_hash, state, attempts, failures,
                    reason, duplicate_of, template_values, run_id, updated_at)
                VALUES ($1, $2, $3, $4, $5, $6, 1, $7, $8, $9, $10, $11, $12)
                ON CONFLICT(root, relative_path) DO UPDATE SET path = $3, pipeline = $4, config_hash = $5,
                    state = $6, attempts = ingest_files.attempts + 1, failures = $7, reason = $8, duplicate_of = $9,
                    dedupe_key = NULL, template_values = $10, run_id = $11, updated_at = $12
                """,
                [
                    root, relativePath, path, pipeline, configHash, state.rawValue, failureText, reason, duplicateOf,
                    JournalRow.json(templateValues), runID, String(rowTime),
                ])
        }
    }

    package func refreshIdentity(fileID: Int64, size: Int64, modified: Int64, inode: UInt64) throws {
        try withConnection { connection in
            try connection.execute(
                "UPDATE ingest_files SET size = $2, mtime_ns = $3, inode = $4 WHERE id = $1",
                [String(fileID), String(size), String(modified), String(Int64(bitPattern: inode))])
        }
    }
}
