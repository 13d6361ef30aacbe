import Foundation
import IngestNative

/// The journal in a PostgreSQL database (`--journal postgres://…`): the same records as the SQLite journal, shared
/// by workers on several machines that ingest one tree (mounted at the same path everywhere) as a work queue.
///
/// A worker *leases* a file before any stage runs: the lease row is locked with `SELECT … FOR UPDATE SKIP LOCKED`
/// (a row another worker is claiming at that instant is skipped, not waited for), then taken if it is free, was
/// given back, or expired. A background thread renews this worker's leases every third of the lease time, so a
/// lease only expires when its worker stopped — a crash, a `kill -9`, a lost network — and another worker then takes
/// the file over. Every write is committed at once (the database is the queue: no batching), and the file's
/// result and the end of its lease are one transaction, so no other worker can take a file whose result is not
/// yet recorded.
public final class PostgresJournal: @unchecked Sendable, JournalStore {
    /// The URL with its password redacted: what every message shows.
    public let path: String
    public var localFiles: [String] { [] }
    public let runID: String
    /// Names this worker in the lease table and in messages: `host:pid:run`.
    public let owner: String
    /// Seconds a lease lasts without renewal.
    public let leaseSeconds: Double

    private let conninfo: String
    private let secret: String?
    /// When this run started, in the database's clock: a file another worker finished after it is not redone.
    private var runStart = ""
    private let poolLock = NSLock()
    private var pool: [PostgresConnection] = []
    /// Guards `held`, `claims`, `stopped`.
    private let stateLock = NSCondition()
    /// Files this worker holds a lease on (`root\0relative`).
    private var held: Set<String> = []
    private var claims: [String: String] = [:]
    private var stopped = false
    private var renewer: Thread?
    private var workLock: FileLock?

    static let schemaVersion = "1"

    /// True for `postgres://` and `postgresql://` URLs: `--journal` takes one of these or a file path.
    public static func isURL(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    /// Connects to the database at `url` and, for a writer, creates the tables if needed and starts renewing
    /// leases. `workLockPath` is locked so two workers on one machine cannot share (and clear) one work folder.
    public convenience init(
        url: String, writer: Bool = true, leaseSeconds: Double = 60, workLockPath: String? = nil
    ) throws {
        try self.init(url: url, writer: writer, leaseSeconds: leaseSeconds, workLockPath: workLockPath, renews: true)
    }

    /// `renews: false` makes a worker that holds its leases without renewing them: a stuck one, for tests.
    init(url: String, writer: Bool, leaseSeconds: Double, workLockPath: String?, renews: Bool) throws {
        conninfo = url
        let (display, password) = PostgresJournal.redact(url)
        path = display
        secret = password
        self.leaseSeconds = leaseSeconds
        runID = UUID().uuidString.lowercased()
        owner = "\(ProcessInfo.processInfo.hostName):\(getpid()):\(runID.prefix(8))"
        if let workLockPath {
            do {
                workLock = try FileLock(path: workLockPath)
            } catch {
                if error.errno == FileLock.heldElsewhere {
                    throw JournalError(
                        "another ingest worker on this machine uses the work folder locked by \(workLockPath); give "
                            + "each worker its own --work-dir")
                }
                throw JournalError("cannot lock \(workLockPath): \(error.reason)")
            }
        }
        try withConnection { connection in
            if writer {
                try connection.run(script: PostgresJournal.schema)
            } else if try connection.execute("SELECT to_regclass('ingest_files')").first?.first ?? nil == nil {
                throw PostgresError(
                    call: "open", message: "the database holds no ingest journal (run `ingest run` first)")
            }
            let version = try connection.execute("SELECT value FROM ingest_meta WHERE key = 'schema'").first?.first
            if let version = version ?? nil, version != PostgresJournal.schemaVersion {
                throw PostgresError(
                    call: "open",
                    message:
                        "the journal has format \(version); this ingest reads format \(PostgresJournal.schemaVersion)")
            }
            runStart = try connection.execute("SELECT now()").first?.first.flatMap { $0 } ?? ""
        }
        if writer && renews { startRenewing() }
    }

    deinit {
        stateLock.lock()
        stopped = true
        stateLock.broadcast()
        stateLock.unlock()
    }

    /// Every table is prefixed `ingest_` (the database may hold others); paths sort in byte order (`COLLATE "C"`)
    /// as in the SQLite journal. One transaction under an advisory lock: workers starting together do not race.
    static let schema = """
        BEGIN;
        SELECT pg_advisory_xact_lock(7238190043);
        CREATE TABLE IF NOT EXISTS ingest_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO ingest_meta(key, value) VALUES ('schema', '\(schemaVersion)') ON CONFLICT DO NOTHING;
        CREATE TABLE IF NOT EXISTS ingest_files(
            id BIGSERIAL PRIMARY KEY,
            root TEXT COLLATE "C" NOT NULL,
            relative_path TEXT COLLATE "C" NOT NULL,
            path TEXT NOT NULL,
            size BIGINT, mtime_ns BIGINT, inode BIGINT, sha256 TEXT,
            pipeline TEXT NOT NULL, config_hash TEXT NOT NULL,
            state TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            failures TEXT, reason TEXT, facts TEXT, template_values TEXT,
            dedupe_key TEXT, duplicate_of TEXT,
            side_effects INTEGER NOT NULL DEFAULT 0,
            run_id TEXT,
            updated_at BIGINT NOT NULL,
            UNIQUE(root, relative_path));
        CREATE INDEX IF NOT EXISTS ingest_files_dedupe ON ingest_files(dedupe_key) WHERE dedupe_key IS NOT NULL;
        CREATE TABLE IF NOT EXISTS ingest_stages(
            file_id BIGINT NOT NULL REFERENCES ingest_files(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            name TEXT NOT NULL,
            status TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            outputs TEXT, error TEXT,
            updated_at BIGINT NOT NULL,
            PRIMARY KEY(file_id, position));
        CREATE TABLE IF NOT EXISTS ingest_leases(
            root TEXT COLLATE "C" NOT NULL,
            relative_path TEXT COLLATE "C" NOT NULL,
            owner TEXT NOT NULL,
            expires_at TIMESTAMPTZ,
            finished_at TIMESTAMPTZ,
            PRIMARY KEY(root, relative_path));
        CREATE INDEX IF NOT EXISTS ingest_leases_owner ON ingest_leases(owner) WHERE expires_at IS NOT NULL;
        CREATE TABLE IF NOT EXISTS ingest_claims(
            dedupe_key TEXT PRIMARY KEY,
            root TEXT COLLATE "C" NOT NULL,
            relative_path TEXT COLLATE "C" NOT NULL,
            path TEXT NOT NULL,
            owner TEXT NOT NULL);
        COMMIT;
        """

    /// The URL as messages may show it (password → REDACTED, in the user part and in a `password=` parameter),
    /// and the password itself, so libpq's messages can be cleaned of it too.
    static func redact(_ url: String) -> (display: String, password: String?) {
        var display = url
        var password: String?
        if let scheme = display.range(of: "://") {
            let rest = display[scheme.upperBound...]
            let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
            if let at = rest[..<authorityEnd].lastIndex(of: "@"),
                let colon = rest[..<at].firstIndex(of: ":")
            {
                let secret = String(rest[rest.index(after: colon)..<at])
                password = secret.removingPercentEncoding ?? secret
                display.replaceSubrange(rest.index(after: colon)..<at, with: Redaction.placeholder)
            }
        }
        if let query = display.firstIndex(of: "?") {
            var items = display[display.index(after: query)...].split(separator: "&").map(String.init)
            for (offset, item) in items.enumerated() where item.lowercased().hasPrefix("password=") {
                let secret = String(item.dropFirst("password=".count))
                password = password ?? (secret.removingPercentEncoding ?? secret)
                items[offset] = "password=" + Redaction.placeholder
            }
            display = String(display[...query]) + items.joined(separator: "&")
        }
        return (display, password)
    }

    // MARK: - Connections

    /// Runs `body` on a pooled connection (one per worker thread at a time; libpq connections are not
    /// thread-safe). A connection the server dropped is not put back.
    @discardableResult
    func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        poolLock.lock()
        let pooled = pool.popLast()
        poolLock.unlock()
        do {
            let connection = try pooled ?? PostgresConnection(conninfo: conninfo, secret: secret)
            defer {
                if connection.isOK {
                    poolLock.lock()
                    pool.append(connection)
                    poolLock.unlock()
                }
            }
            return try body(connection)
        } catch let error as PostgresError {
            throw JournalError("journal \(path): \(error.message)", isDiskFull: error.isDiskFull)
        }
    }

    /// `body` inside BEGIN … COMMIT; a failure rolls back and is rethrown.
    @discardableResult
    private func transaction<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try withConnection { connection in
            try connection.run(script: "BEGIN")
            do {
                let result = try body(connection)
                try connection.run(script: "COMMIT")
                return result
            } catch {
                try? connection.run(script: "ROLLBACK")
                throw error
            }
        }
    }

    private static func key(_ root: String, _ relativePath: String) -> String { root + "\u{0}" + relativePath }

    // MARK: - Leases

    public var leasePollInterval: Double { min(max(leaseSeconds / 4, 0.1), 5) }

    public func lease(root: String, relativePath: String) throws -> JournalLease {
        let answer: JournalLease = try transaction { connection in
            try connection.execute(
                "INSERT INTO ingest_leases(root, relative_path, owner) VALUES ($1, $2, '') ON CONFLICT DO NOTHING",
                [root, relativePath])
            let rows = try connection.execute(
                """
                SELECT owner, expires_at IS NOT NULL AND expires_at > now(), expires_at IS NULL
                    AND finished_at >= $3::timestamptz
                FROM ingest_leases WHERE root = $1 AND relative_path = $2 FOR UPDATE SKIP LOCKED
                """, [root, relativePath, runStart])
            // Locked: another worker is taking or giving back this very file right now.
            guard let row = rows.first else { return .heldElsewhere(owner: "another worker") }
            let holder = row[0] ?? ""
            if holder != owner && row[1] == "t" { return .heldElsewhere(owner: holder) }
            if holder != owner && row[2] == "t" { return .handledElsewhere(owner: holder) }
            try connection.execute(
                """
                UPDATE ingest_leases SET owner = $3, expires_at = now() + make_interval(secs => $4::float8),
                    finished_at = NULL
                WHERE root = $1 AND relative_path = $2
                """, [root, relativePath, owner, String(leaseSeconds)])
            return .granted
        }
        if answer == .granted {
            stateLock.lock()
            held.insert(PostgresJournal.key(root, relativePath))
            stateLock.unlock()
        }
        return answer
    }

    public func endLease(root: String, relativePath: String) {
        guard takeHeld(root, relativePath) else { return }
        _ = try? withConnection { connection in
            try connection.execute(PostgresJournal.releaseSQL, [root, relativePath, owner])
        }
    }

    private static let releaseSQL = """
        UPDATE ingest_leases SET expires_at = NULL, finished_at = now()
        WHERE root = $1 AND relative_path = $2 AND owner = $3
        """

    /// Removes the file from `held`: true when this worker held it.
    private func takeHeld(_ root: String, _ relativePath: String) -> Bool {
        stateLock.lock()
        defer { stateLock.unlock() }
        return held.remove(PostgresJournal.key(root, relativePath)) != nil
    }

    /// Renews this worker's leases every third of the lease time, on a connection of its own.
    private func startRenewing() {
        let interval = leaseSeconds / 3
        let thread = Thread { [weak self] in
            var connection: PostgresConnection?
            while let self {
                self.stateLock.lock()
                if !self.stopped { _ = self.stateLock.wait(until: Date(timeIntervalSinceNow: interval)) }
                let stop = self.stopped
                let busy = !self.held.isEmpty
                self.stateLock.unlock()
                if stop { return }
                guard busy else { continue }
                do {
                    if connection == nil || connection?.isOK == false {
                        connection = try PostgresConnection(conninfo: self.conninfo, secret: self.secret)
                    }
                    try connection?.execute(
                        """
                        UPDATE ingest_leases SET expires_at = now() + make_interval(secs => $2::float8)
                        WHERE owner = $1 AND expires_at IS NOT NULL
                        """, [self.owner, String(self.leaseSeconds)])
                } catch {
                    // The next round tries again; a lease lost meanwhile is taken over by another worker.
                    connection = nil
                }
            }
        }
        thread.name = "ingest-lease-renewal"
        renewer = thread
        thread.start()
    }

    // MARK: - Reading

    public func knows(root: String) throws -> Bool {
        // Other workers add files at any moment: every file is looked up.
        true
    }

    public func record(root: String, relativePath: String) throws -> JournalRecord? {
        try withConnection { connection in
            try connection.execute(
                "SELECT \(SQLiteJournal.recordColumns) FROM ingest_files WHERE root = $1 AND relative_path = $2",
                [root, relativePath]
            ).first.map(PostgresJournal.record(from:))
        }
    }

    static func record(from row: [String?]) -> JournalRecord {
        SQLiteJournal.record(from: row.map { $0.map(SQLiteValue.text) ?? .null })
    }

    public func forEachRecord(_ body: (JournalRecord) throws -> Void) throws {
        var after: (String, String)?
        while true {
            // Pages in path order, so a journal of any size is walked in bounded memory.
            let page: [[String?]] = try withConnection { connection in
                try connection.execute(
                    """
                    SELECT \(SQLiteJournal.recordColumns) FROM ingest_files
                    WHERE $1::text IS NULL OR (root, relative_path) > ($1, $2)
                    ORDER BY root, relative_path LIMIT 1000
                    """, [after?.0, after?.1 ?? ""])
            }
            for row in page { try body(PostgresJournal.record(from: row)) }
            guard page.count == 1000, let last = page.last else { return }
            after = (last[1] ?? "", last[2] ?? "")
        }
    }

    public func counts() throws -> [JournalState: Int] {
        try withConnection { connection in
            var counts: [JournalState: Int] = [:]
            for row in try connection.execute("SELECT state, COUNT(*) FROM ingest_files GROUP BY state") {
                if let state = row[0].flatMap(JournalState.init(rawValue:)) { counts[state] = Int(row[1] ?? "") ?? 0 }
            }
            return counts
        }
    }

    public func stages(fileID: Int64) throws -> [JournalStage] {
        try withConnection { connection in
            try connection.execute(
                """
                SELECT position, name, status, attempts, outputs, error FROM ingest_stages WHERE file_id = $1
                ORDER BY position
                """, [String(fileID)]
            ).map { row in
                JournalStage(
                    position: Int(row[0] ?? "") ?? 0, name: row[1] ?? "",
                    status: row[2].flatMap(JournalStage.Status.init(rawValue:)) ?? .started,
                    attempts: Int(row[3] ?? "") ?? 0,
                    outputs: SQLiteJournal.object(row[4].map(SQLiteValue.text) ?? .null),
                    error: row[5])
            }
        }
    }

    public func meta(_ key: String) throws -> String? {
        try withConnection { connection in
            try connection.execute("SELECT value FROM ingest_meta WHERE key = $1", [key]).first?.first ?? nil
        }
    }

    public func setMeta(_ key: String, _ value: String) throws {
        try withConnection { connection in
            try connection.execute(
                "INSERT INTO ingest_meta(key, value) VALUES ($1, $2) ON CONFLICT(key) DO UPDATE SET value = $2",
                [key, value])
        }
    }

    // MARK: - Writing (each call commits before it returns)

    public func commit() throws {}

    /// Stops renewing and gives back any lease still held (files of a run that stopped early), so other workers
    /// take them over at once instead of after the lease time.
    public func close() throws {
        stateLock.lock()
        stopped = true
        let leftover = held
        held.removeAll()
        stateLock.broadcast()
        stateLock.unlock()
        if !leftover.isEmpty {
            try withConnection { connection in
                try connection.execute(
                    "UPDATE ingest_leases SET expires_at = now() WHERE owner = $1 AND expires_at IS NOT NULL", [owner])
            }
        }
        poolLock.lock()
        pool.removeAll()
        poolLock.unlock()
        workLock = nil
    }

    /// Claims `key` for a file this worker holds the lease on. A claim made by another worker stands while that
    /// worker's lease on its file lives: two copies of one content started at the same moment on two machines
    /// cannot both pass (the INSERT … ON CONFLICT is one atomic step in PostgreSQL), and a claim whose worker
    /// stopped is taken over with its lease. Done files, and files that failed after a request went out, hold
    /// their keys in `ingest_files` for good.
    public func claim(
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

    public func release(key: String) {
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

    private func upsert(
        _ connection: PostgresConnection, _ start: JournalStart, state: JournalState, countAttempt: Bool,
        failures: String? = nil, reason: String? = nil, facts: String? = nil
    ) throws -> Int64 {
        let values: [String?] = [
            start.root, start.relativePath, start.path, String(start.size), String(start.modified),
            String(Int64(bitPattern: start.inode)), start.sha256, start.pipeline, start.configHash,
            SQLiteJournal.json(start.templateValues), state == .failed ? nil : start.dedupeKey, runID,
            String(SQLiteJournal.now),
            start.keepStages ? "1" : "0", state.rawValue, countAttempt ? "1" : "0", failures, reason, facts,
        ]
        let rows = try connection.execute(
            """
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
            """, values)
        return Int64(rows.first?.first.flatMap { $0 } ?? "") ?? 0
    }

    public func begin(_ start: JournalStart) throws -> Int64 {
        try transaction { connection in
            let id = try upsert(connection, start, state: .running, countAttempt: true)
            if !start.keepStages, start.existingID != nil {
                try connection.execute("DELETE FROM ingest_stages WHERE file_id = $1", [String(id)])
            }
            return id
        }
    }

    public func finish(
        _ start: JournalStart, id: Int64?, state: JournalState, failures: [RuleFailure], reason: String?,
        facts: JSONObject
    ) throws {
        if state == .failed, let key = start.dedupeKey, id == nil { release(key: key) }
        let failureText = failures.isEmpty ? nil : JSONValue.array(failures.map(\.json)).serialized()
        let factsText = SQLiteJournal.json(facts)
        let leased = takeHeld(start.root, start.relativePath)
        try transaction { connection in
            if let id {
                try connection.execute(
                    """
                    UPDATE ingest_files SET state = $2, failures = $3, reason = $4, facts = $5,
                        sha256 = COALESCE($6, sha256),
                        dedupe_key = CASE WHEN $2 = 'failed' AND side_effects = 0 THEN NULL ELSE dedupe_key END,
                        template_values = $8, updated_at = $7
                    WHERE id = $1
                    """,
                    [
                        String(id), state.rawValue, failureText, reason, factsText, start.sha256,
                        String(SQLiteJournal.now),
                        SQLiteJournal.json(start.templateValues),
                    ])
            } else {
                let fileID = try upsert(
                    connection, start, state: state, countAttempt: true, failures: failureText, reason: reason,
                    facts: factsText)
                if !start.keepStages, start.existingID != nil {
                    try connection.execute("DELETE FROM ingest_stages WHERE file_id = $1", [String(fileID)])
                }
            }
            // The result and the end of the lease commit together: no other worker takes an unrecorded file.
            if leased { try connection.execute(PostgresJournal.releaseSQL, [start.root, start.relativePath, owner]) }
        }
    }

    public func stageStarted(fileID: Int64, position: Int, name: String, barrier: Bool) throws {
        try transaction { connection in
            try connection.execute(
                """
                INSERT INTO ingest_stages(file_id, position, name, status, attempts, updated_at)
                VALUES ($1, $2, $3, 'started', 1, $4)
                ON CONFLICT(file_id, position) DO UPDATE SET name = $3, status = 'started',
                    attempts = ingest_stages.attempts + 1, outputs = NULL, error = NULL, updated_at = $4
                """, [String(fileID), String(position), name, String(SQLiteJournal.now)])
            if barrier {
                try connection.execute("UPDATE ingest_files SET side_effects = 1 WHERE id = $1", [String(fileID)])
            }
        }
    }

    public func stageFinished(
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
                    String(fileID), String(position), name, status.rawValue, SQLiteJournal.json(outputs), error,
                    String(SQLiteJournal.now),
                ])
        }
    }

    public func recordWithoutWork(
        root: String, relativePath: String, path: String, pipeline: String, configHash: String, state: JournalState,
        failures: [RuleFailure] = [], reason: String? = nil, duplicateOf: String? = nil,
        templateValues: JSONObject = [:]
    ) throws {
        let failureText = failures.isEmpty ? nil : JSONValue.array(failures.map(\.json)).serialized()
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
                    SQLiteJournal.json(templateValues), runID, String(SQLiteJournal.now),
                ])
        }
    }

    public func refreshIdentity(fileID: Int64, size: Int64, modified: Int64, inode: UInt64) throws {
        try withConnection { connection in
            try connection.execute(
                "UPDATE ingest_files SET size = $2, mtime_ns = $3, inode = $4 WHERE id = $1",
                [String(fileID), String(size), String(modified), String(Int64(bitPattern: inode))])
        }
    }
}
