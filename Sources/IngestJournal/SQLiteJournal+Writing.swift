import Foundation
import IngestCore
import NativeSQLite

/// The SQLite journal's writes. Those that only save local work are queued and batched; the *barriers* around a
/// stage that uses the network commit before they return (`SQLiteBatchWriter`).
extension SQLiteJournal {
    /// Claims `key` for the file at `path`: nil when it is now this file's, else the path of the file that holds
    /// it — one of this run, or a journaled file that is done, or failed after a request went out. Check and claim
    /// are one step under a lock, so two workers cannot both take a key. (One run writes a SQLite journal at a
    /// time, so the claims of this run are all there are.)
    package func claim(
        key: String, root: String, relativePath: String, path: String, excluding existingID: Int64?
    ) throws -> String? {
        claimLock.lock()
        defer { claimLock.unlock() }
        if let holder = claims[key] { return holder == path ? nil : holder }
        // Earlier runs' holders are committed, so a read connection sees them.
        let holder = try read { reader in
            try reader.statement(
                """
                SELECT path FROM files WHERE dedupe_key = ?1 AND id != ?2 AND (state = 'done' OR side_effects = 1)
                LIMIT 1
                """
            ).rows([.text(key), .integer(existingID ?? -1)]).first?.first?.string
        }
        if let holder { return holder }
        claims[key] = path
        return nil
    }

    /// Gives a key back (its file failed before anything left the machine).
    package func release(key: String) {
        claimLock.lock()
        claims[key] = nil
        claimLock.unlock()
    }

    /// Writes the file's row as `running` (one more attempt) and returns its id; committed with the barrier of
    /// the first stage that uses the network. Files that never reach such a stage skip this: their one row is
    /// written by `finish`, since losing it in a crash only means redoing local work.
    package func begin(_ start: JournalStart) throws -> Int64 {
        try batches.write(barrier: false) {
            let id = try upsert(start, state: .running, countAttempt: true)
            if !start.keepStages, start.existingID != nil {
                try batches.statement("DELETE FROM stages WHERE file_id = ?1").run([.integer(id)])
            }
            return id
        }
    }

    /// INSERT or UPDATE of a file's row with everything `start` knows (and, for a file that ends without having
    /// begun, how it ended); returns its id.
    @discardableResult
    private func upsert(
        _ start: JournalStart, state: JournalState, countAttempt: Bool, failures: String? = nil, reason: String? = nil,
        facts: String? = nil, needsID: Bool = true
    ) throws -> Int64 {
        let values: [SQLiteValue] = [
            .text(start.root), .text(start.relativePath), .text(start.path), .integer(start.size),
            .integer(start.modified), .integer(Int64(bitPattern: start.inode)), start.sha256.map { .text($0) } ?? .null,
            .text(start.pipeline), .text(start.configHash), .text(JournalRow.json(start.templateValues)),
            (state == .failed ? nil : start.dedupeKey).map { .text($0) } ?? .null, .text(runID),
            .integer(rowTime), .integer(start.keepStages ? 1 : 0), .text(state.rawValue),
            .integer(countAttempt ? 1 : 0), failures.map { .text($0) } ?? .null, reason.map { .text($0) } ?? .null,
            facts.map { .text($0) } ?? .null,
        ]
        // Prepared once and kept: the statement cache is keyed by the SQL, which is long to hash once per file.
        guard needsID else {
            // Without RETURNING: SQLite then needs no temporary table for the answer (most rows of a batch).
            if upsertWithoutIDStatement == nil {
                upsertWithoutIDStatement = try batches.statement(
                    SQLiteJournal.upsertSQL.replacingOccurrences(of: "RETURNING id", with: ""))
            }
            try upsertWithoutIDStatement!.run(values)
            return start.existingID ?? 0
        }
        if upsertStatement == nil { upsertStatement = try batches.statement(SQLiteJournal.upsertSQL) }
        return try upsertStatement!.rows(values).first?.first?.int ?? 0
    }

    /// The row of a file the journal did not have, written by a plain INSERT: the cheapest statement for the
    /// commonest write (every file of a new batch that has no network stage). Empty facts and template values are
    /// left NULL, which reads back as empty. False when a row turned out to exist; the caller then upserts.
    private func insertNew(
        _ start: JournalStart, state: JournalState, failures: String?, reason: String?, facts: String?
    ) throws(SQLiteError) -> Bool {
        if insertStatement == nil {
            insertStatement = try batches.statement(
                """
                INSERT INTO files(root, relative_path, path, size, mtime_ns, inode, sha256, pipeline, config_hash,
                    state, attempts, template_values, dedupe_key, run_id, updated_at, failures, reason, facts)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 1, ?11, ?12, ?13, ?14, ?15, ?16, ?17)
                """)
        }
        do {
            try insertStatement!.run([
                .text(start.root), .text(start.relativePath), .text(start.path), .integer(start.size),
                .integer(start.modified), .integer(Int64(bitPattern: start.inode)),
                start.sha256.map { .text($0) } ?? .null, .text(start.pipeline), .text(start.configHash),
                .text(state.rawValue),
                start.templateValues.isEmpty ? .null : .text(JournalRow.json(start.templateValues)),
                (state == .failed ? nil : start.dedupeKey).map { .text($0) } ?? .null, .text(runID),
                .integer(rowTime), failures.map { .text($0) } ?? .null, reason.map { .text($0) } ?? .null,
                facts.map { .text($0) } ?? .null,
            ])
            return true
        } catch  where error.isConstraint {
            return false
        }
    }

    static let upsertSQL = """
        INSERT INTO files(root, relative_path, path, size, mtime_ns, inode, sha256, pipeline, config_hash, state,
            attempts, template_values, dedupe_key, run_id, updated_at, failures, reason, facts)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?15, 1, ?10, ?11, ?12, ?13, ?17, ?18, ?19)
        ON CONFLICT(root, relative_path) DO UPDATE SET path = ?3, size = ?4, mtime_ns = ?5, inode = ?6,
            sha256 = ?7, pipeline = ?8, config_hash = ?9, state = ?15, attempts = attempts + ?16,
            failures = ?17, reason = ?18, facts = ?19, template_values = ?10, dedupe_key = ?11,
            duplicate_of = NULL, side_effects = CASE WHEN ?14 = 1 THEN side_effects ELSE 0 END, run_id = ?12,
            updated_at = ?13
        RETURNING id
        """

    /// Records the end of a file's work: its state, failures or skip reason, facts and hash. `id` is the row
    /// `begin` wrote, or nil when the file never reached a network stage (then the whole row is written here).
    package func finish(
        _ start: JournalStart, id: Int64?, state: JournalState, failures: [RuleFailure], reason: String?,
        facts: JSONObject
    ) throws {
        releaseKey(of: start, id: id, state: state)
        let failureText = JournalRow.json(failures)
        let factsText = JournalRow.json(facts)
        batches.enqueue { [self] in
            guard let fileID = id else {
                // Never begun (no network stage ran): one statement writes the whole row.
                if start.existingID == nil,
                    try insertNew(
                        start, state: state, failures: failureText, reason: reason,
                        facts: facts.isEmpty ? nil : factsText)
                {
                    return
                }
                // An existing row keeps its id, so the id is only needed (and asked for) to clear old stages.
                try upsert(
                    start, state: state, countAttempt: true, failures: failureText, reason: reason, facts: factsText,
                    needsID: false)
                if !start.keepStages, let existing = start.existingID {
                    try batches.statement("DELETE FROM stages WHERE file_id = ?1").run([.integer(existing)])
                }
                return
            }
            try batches.statement(
                """
                UPDATE files SET state = ?2, failures = ?3, reason = ?4, facts = ?5, sha256 = COALESCE(?6, sha256),
                    dedupe_key = CASE WHEN ?2 = 'failed' AND side_effects = 0 THEN NULL ELSE dedupe_key END,
                    template_values = ?8, updated_at = ?7
                WHERE id = ?1
                """
            ).run([
                .integer(fileID), .text(state.rawValue), failureText.map { .text($0) } ?? .null,
                reason.map { .text($0) } ?? .null, .text(factsText), start.sha256.map { .text($0) } ?? .null,
                .integer(rowTime), .text(JournalRow.json(start.templateValues)),
            ])
        }
    }

    /// Records that a stage starts. For a stage that uses the network this is a barrier: committed before the
    /// stage may run, so a crash from here on is known to have happened mid-stage.
    package func stageStarted(fileID: Int64, position: Int, name: String, barrier: Bool) throws {
        try batches.write(barrier: barrier) {
            try batches.statement(
                """
                INSERT INTO stages(file_id, position, name, status, attempts, updated_at)
                VALUES (?1, ?2, ?3, 'started', 1, ?4)
                ON CONFLICT(file_id, position) DO UPDATE SET name = ?3, status = 'started', attempts = attempts + 1,
                    outputs = NULL, error = NULL, updated_at = ?4
                """
            ).run([.integer(fileID), .integer(Int64(position)), .text(name), .integer(rowTime)])
            if barrier {
                try batches.statement("UPDATE files SET side_effects = 1 WHERE id = ?1").run([.integer(fileID)])
            }
        }
    }

    /// Records how a stage ended and what it produced; a barrier for a stage that uses the network.
    package func stageFinished(
        fileID: Int64, position: Int, name: String, status: JournalStage.Status, outputs: JSONObject,
        error: String?, barrier: Bool
    ) throws {
        try batches.write(barrier: barrier) {
            try batches.statement(
                """
                INSERT INTO stages(file_id, position, name, status, attempts, outputs, error, updated_at)
                VALUES (?1, ?2, ?3, ?4, 1, ?5, ?6, ?7)
                ON CONFLICT(file_id, position) DO UPDATE SET name = ?3, status = ?4, outputs = ?5, error = ?6,
                    updated_at = ?7
                """
            ).run([
                .integer(fileID), .integer(Int64(position)), .text(name), .text(status.rawValue),
                .text(JournalRow.json(outputs)), error.map { .text($0) } ?? .null, .integer(rowTime),
            ])
        }
    }

    /// Records a file skipped as a duplicate of `earlier`, or one that failed before work on it could start (a
    /// walker problem, an unreadable file): no stage ran.
    package func recordWithoutWork(
        root: String, relativePath: String, path: String, pipeline: String, configHash: String, state: JournalState,
        failures: [RuleFailure] = [], reason: String? = nil, duplicateOf: String? = nil,
        templateValues: JSONObject = [:]
    ) throws {
        batches.enqueue { [self] in
            let failureText = JournalRow.json(failures)
            try batches.statement(
                """
                INSERT INTO files(root, relative_path, path, pipeline, config_hash, state, attempts, failures, reason,
                    duplicate_of, template_values, run_id, updated_at)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7, ?8, ?9, ?10, ?11, ?12)
                ON CONFLICT(root, relative_path) DO UPDATE SET path = ?3, pipeline = ?4, config_hash = ?5, state = ?6,
                    attempts = attempts + 1, failures = ?7, reason = ?8, duplicate_of = ?9, dedupe_key = NULL,
                    template_values = ?10, run_id = ?11, updated_at = ?12
                """
            ).run([
                .text(root), .text(relativePath), .text(path), .text(pipeline), .text(configHash),
                .text(state.rawValue),
                failureText.map { .text($0) } ?? .null, reason.map { .text($0) } ?? .null,
                duplicateOf.map { .text($0) } ?? .null, .text(JournalRow.json(templateValues)), .text(runID),
                .integer(rowTime),
            ])
        }
    }

    /// A done file whose size, mtime or inode changed but whose content did not (a copy, a `touch`): the new
    /// identity is kept so the next run takes the fast check again.
    package func refreshIdentity(fileID: Int64, size: Int64, modified: Int64, inode: UInt64) throws {
        batches.enqueue { [self] in
            try batches.statement("UPDATE files SET size = ?2, mtime_ns = ?3, inode = ?4 WHERE id = ?1").run([
                .integer(fileID), .integer(size), .integer(modified), .integer(Int64(bitPattern: inode)),
            ])
        }
    }

    package func setMeta(_ key: String, _ value: String) throws {
        try batches.write(barrier: false) {
            try batches.statement(
                "INSERT INTO meta(key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = ?2"
            ).run([.text(key), .text(value)])
        }
    }
}
