import Foundation

/// Work taken a batch at a time, as job queues on PostgreSQL do (`FOR UPDATE SKIP LOCKED` over many rows): one
/// request reads the records of the next files, one more leases those that need it. A file done with the same
/// content needs no lease: it is skipped without a write.
extension PostgresJournal {
    /// What `leaseAhead` learnt about one file, until its worker asks.
    struct AheadAnswer {
        var lease: JournalLease
        var record: JournalRecord?
    }

    package var leasesAhead: Bool { true }

    package func leaseAhead(_ files: [JournalFileKey], needsLease: (JournalFileKey, JournalRecord?) -> Bool) throws {
        guard !files.isEmpty else { return }
        let known = try records(of: files)
        var answers: [String: AheadAnswer] = [:]
        var wanted: [JournalFileKey] = []
        for file in files {
            let record = known[PostgresJournal.key(file.root, file.relativePath)]
            if needsLease(file, record) {
                wanted.append(file)
            } else {
                answers[PostgresJournal.key(file.root, file.relativePath)] = AheadAnswer(
                    lease: .granted, record: record)
            }
        }
        stateLock.withLock { ahead.merge(answers) { _, new in new } }
        try leaseAll(wanted)
    }

    /// Leases `files` and keeps the answers, with the records of those granted, for `lease` and `record`.
    func leaseAll(_ files: [JournalFileKey]) throws {
        let (leases, fresh) = try takeLeases(files)
        var answers: [String: AheadAnswer] = [:]
        for (key, lease) in leases { answers[key] = AheadAnswer(lease: lease, record: fresh[key]) }
        stateLock.withLock { ahead.merge(answers) { _, new in new } }
    }

    /// The records of `files` there are, by `key`.
    func records(of files: [JournalFileKey]) throws -> [String: JournalRecord] {
        let rows = try withConnection { connection in
            try connection.execute(
                """
                SELECT \(JournalSchema.recordColumns) FROM ingest_files
                WHERE (root, relative_path) IN (SELECT * FROM unnest($1::text[], $2::text[]))
                """, PostgresJournal.arrays(files))
        }
        var records: [String: JournalRecord] = [:]
        for record in rows.map(JournalRecord.init(row:)) {
            records[PostgresJournal.key(record.root, record.relativePath)] = record
        }
        return records
    }

    /// Leases `files` in one transaction: each is granted (free, given back before this run, or expired), held by
    /// a live worker, handled by another worker since this run started, or — its row locked by another worker at
    /// this instant — passed over. Returns the answers by `key`, and the records of the files granted, read once
    /// their leases are taken.
    func takeLeases(_ files: [JournalFileKey]) throws -> ([String: JournalLease], [String: JournalRecord]) {
        guard !files.isEmpty else { return ([:], [:]) }
        let arrays = PostgresJournal.arrays(files)
        let answers = try withConnection { connection in
            try connection.pipeline([
                // In path order, so two workers inserting overlapping batches wait for each other, never deadlock.
                (
                    """
                    INSERT INTO ingest_leases(root, relative_path, owner)
                    SELECT root, relative_path, '' FROM unnest($1::text[], $2::text[]) AS wanted(root, relative_path)
                    ORDER BY root COLLATE "C", relative_path COLLATE "C"
                    ON CONFLICT DO NOTHING
                    """, arrays
                ),
                (PostgresJournal.leaseBatchSQL, arrays + [owner, String(leaseSeconds), runStart]),
                (
                    """
                    SELECT \(JournalSchema.recordColumns) FROM ingest_files
                    WHERE (root, relative_path) IN (
                        SELECT root, relative_path FROM ingest_leases
                        WHERE owner = $3 AND expires_at IS NOT NULL
                            AND (root, relative_path) IN (SELECT * FROM unnest($1::text[], $2::text[])))
                    """, arrays + [owner]
                ),
            ])
        }
        var leases: [String: JournalLease] = [:]
        for file in files {
            leases[PostgresJournal.key(file.root, file.relativePath)] = .heldElsewhere(owner: "another worker")
        }
        var granted: [String] = []
        for row in answers[1] {
            let key = PostgresJournal.key(row[0] ?? "", row[1] ?? "")
            let holder = row[2] ?? ""
            if row[5] == "t" {
                leases[key] = .granted
                granted.append(key)
            } else if row[3] == "t" {
                leases[key] = .heldElsewhere(owner: holder)
            } else {
                leases[key] = .handledElsewhere(owner: holder)
            }
        }
        stateLock.withLock { held.formUnion(granted) }
        var records: [String: JournalRecord] = [:]
        for record in answers[2].map(JournalRecord.init(row:)) {
            records[PostgresJournal.key(record.root, record.relativePath)] = record
        }
        return (leases, records)
    }

    /// Locks the batch's lease rows no other worker is locking, takes those neither live elsewhere nor finished
    /// elsewhere since this run started (`$5`), and answers for every row it locked: root, path, owner before, live,
    /// handled, granted.
    static let leaseBatchSQL = """
        WITH candidate AS (
            SELECT lease.root, lease.relative_path, lease.owner,
                lease.expires_at IS NOT NULL AND lease.expires_at > now() AS live,
                lease.expires_at IS NULL AND lease.finished_at >= $5::timestamptz AS handled
            FROM ingest_leases AS lease
            WHERE (lease.root, lease.relative_path) IN (SELECT * FROM unnest($1::text[], $2::text[]))
            FOR UPDATE OF lease SKIP LOCKED),
        taken AS (
            UPDATE ingest_leases AS lease SET owner = $3,
                expires_at = now() + make_interval(secs => $4::float8), finished_at = NULL
            FROM candidate
            WHERE lease.root = candidate.root AND lease.relative_path = candidate.relative_path
                AND (candidate.owner = $3 OR NOT (candidate.live OR COALESCE(candidate.handled, false)))
            RETURNING lease.root, lease.relative_path)
        SELECT candidate.root, candidate.relative_path, candidate.owner, candidate.live,
            COALESCE(candidate.handled, false), taken.root IS NOT NULL
        FROM candidate LEFT JOIN taken
            ON taken.root = candidate.root AND taken.relative_path = candidate.relative_path
        """

    /// The answer `leaseAhead` kept for the file, if any; a lease not granted is forgotten once given.
    func aheadLease(_ key: String) -> JournalLease? {
        stateLock.withLock {
            guard let answer = ahead[key] else { return nil }
            if answer.lease != .granted { ahead[key] = nil }
            return answer.lease
        }
    }

    /// The record `leaseAhead` read for the file, once (`.some(nil)`: the journal has none).
    func aheadRecord(_ key: String) -> JournalRecord?? {
        stateLock.withLock { ahead.removeValue(forKey: key).map(\.record) }
    }

    /// The roots and relative paths of `files` as two PostgreSQL text arrays (`unnest` pairs them again).
    static func arrays(_ files: [JournalFileKey]) -> [String?] {
        [arrayLiteral(files.map(\.root)), arrayLiteral(files.map(\.relativePath))]
    }

    /// `{"a","b"}`: every element quoted, `\` and `"` escaped, so any path (spaces, commas, braces) is one element.
    static func arrayLiteral(_ values: [String]) -> String {
        var text = "{"
        for (index, value) in values.enumerated() {
            if index > 0 { text += "," }
            text += "\""
            for character in value.unicodeScalars {
                if character == "\\" || character == "\"" { text += "\\" }
                text.unicodeScalars.append(character)
            }
            text += "\""
        }
        return text + "}"
    }
}
