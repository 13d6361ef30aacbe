import Foundation
import IngestNative

/// The batch journal: one SQLite file (`.ingest/journal.sqlite` by default, WAL mode) with a row per input file
/// and a row per stage of it. A run reads it to skip files already done, and writes it as files go.
///
/// Writes are grouped into transactions (up to `batchLimit` writes or `batchInterval` seconds) so the journal is
/// not the bottleneck, except at *barriers*: "stage started" before a stage that uses the network, and "stage done
/// + its results" right after, are committed before the run goes on. A `kill -9` can therefore lose only records
/// of local work, which a re-run simply redoes; it never loses the record of something the outside world saw.
///
/// One writer at a time: a run holds an exclusive lock on `<journal>.lock` (released by the kernel if the process
/// dies). Thread-safe. Workers never wait on each other for the journal: lookups go through a pool of read
/// connections (WAL readers do not block the writer), and the records of finished files are queued in memory and
/// written as one transaction by whichever worker finds the batch due.
public final class SQLiteJournal: @unchecked Sendable {
    public let path: String
    private let database: Database
    private var writerLock: FileLock?
    /// Guards `database`, `statements` and `inTransaction`.
    private let lock = NSLock()
    private var statements: [String: Statement] = [:]
    private var inTransaction = false
    /// Guards `pending`, `batchStarted`, `deferredError`, `claims` and `readers`.
    private let queueLock = NSLock()
    private var pending: [() throws -> Void] = []
    private var batchStarted = Date()
    private var deferredError: JournalError?
    private var readers: [Reader] = []
    /// Identifies this run: a `running` row of another run that made no side effect holds no dedupe key.
    public let runID: String

    /// Writes per transaction, and seconds a transaction stays open, before a commit. A row costs several times
    /// less in a batch of thousands than in one of hundreds; the last batch, which the run writes itself as it
    /// ends, stays short (about 10 ms).
    public var batchLimit = 2_000
    public var batchInterval = 0.5
    /// Queued writes beyond which a worker writes them itself (the background writer fell behind).
    static let maxQueued = 20_000

    static let schemaVersion = "1"
    /// Bytes the write-ahead log file is cut back to after a checkpoint.
    static let walSizeLimit = 8 << 20

    /// Opens (creating it and its folder when `create` is true) the journal at `path`. A writer takes the lock.
    public init(path: String, writer: Bool = true, create: Bool = true) throws {
        self.path = path
        runID = UUID().uuidString.lowercased()
        let folder = (path as NSString).deletingLastPathComponent
        if !create && !FileManager.default.fileExists(atPath: path) {
            throw JournalError("no journal at \(path) (run `ingest run` first, or pass --journal PATH)")
        }
        if create && !folder.isEmpty {
            do {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            } catch {
                throw JournalError("cannot create the journal folder \(folder): \(error.localizedDescription)")
            }
        }
        if writer {
            do {
                writerLock = try FileLock(path: path + ".lock")
            } catch {
                if error.errno == FileLock.heldElsewhere {
                    throw JournalError("another ingest run is using the journal \(path); wait for it to finish")
                }
                throw JournalError("cannot lock the journal \(path): \(error.reason)")
            }
        } else {
            writerLock = nil
        }
        do {
            // Created whole, or checked before use: a journal without its tables is never taken for a new one.
            if !FileManager.default.fileExists(atPath: path) {
                try JournalFile.create(path)
            } else if writer {
                try JournalFile.checkBeforeWriting(path)
            }
            database = try Database(path: path, create: false)
            database.setBusyTimeout(milliseconds: 5_000)
            // A reader (`ingest status` beside a run) must not fold the log at close: that takes the write lock.
            if !writer { try database.keepWriteAheadLogOnClose() }
            // Checked before the pragmas write to it: a file that is not ours is left as it was.
            try JournalFile.checkSchema(database, path: path)
            try database.execute(
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; "
                    + "PRAGMA journal_size_limit=\(SQLiteJournal.walSizeLimit);")
        } catch let error as SQLiteError {
            throw JournalError("cannot open the journal \(path): \(error.message)")
        }
        if writer { writerLock?.recordOwner(runID: runID) }
    }

    deinit {
        backgroundWriter?.stop()
        if inTransaction { try? database.execute("COMMIT") }
    }

    // MARK: - Transactions

    /// Runs `body` on the writer connection inside a transaction that also applies every queued write first (so
    /// records keep their order); commits when `barrier` is set. A failure rolls back and is rethrown.
    private func write<T>(barrier: Bool, _ body: () throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        do {
            try beginLocked()
            try applyQueued()
            let result = try body()
            if barrier { try commitLocked() }
            return result
        } catch let error as SQLiteError {
            rollbackLocked()
            throw JournalError("journal \(path): \(error.message)", isDiskFull: error.isDiskFull)
        }
    }

    /// Queues a write that may be lost in a crash (it only saves local work); written with the next batch.
    private func enqueue(_ operation: @escaping () throws -> Void) {
        queueLock.lock()
        if pending.isEmpty { batchStarted = Date() }
        pending.append(operation)
        let due = pending.count >= batchLimit || Date().timeIntervalSince(batchStarted) >= batchInterval
        let backlog = pending.count >= SQLiteJournal.maxQueued
        queueLock.unlock()
        if backlog {
            // The background writer fell behind (every core busy with other work): the worker writes the backlog
            // itself rather than let memory grow.
            lock.lock()
            writeQueuedLocked()
            lock.unlock()
            return
        }
        // Written by a thread of its own: a worker that wrote the batch itself would hold back its file's report,
        // and with it every later report and the run's window (the cores sit idle meanwhile).
        guard due else { return }
        if backgroundWriter == nil {
            queueLock.lock()
            if backgroundWriter == nil { backgroundWriter = BackgroundWriter(journal: self) }
            queueLock.unlock()
        }
        backgroundWriter?.request()
    }

    /// Set on first use; guarded by `queueLock` when set.
    private var backgroundWriter: BackgroundWriter?

    /// The thread that writes queued batches. It holds the journal weakly, and ends with it (or at `close`).
    private final class BackgroundWriter: @unchecked Sendable {
        private let condition = NSCondition()
        private var requested = false
        private var stopped = false

        init(journal: SQLiteJournal) {
            let thread = Thread { [weak journal, self] in
                while true {
                    self.condition.lock()
                    while !self.requested && !self.stopped {
                        // Wakes now and then to notice a journal that went away without `close`.
                        if !self.condition.wait(until: Date(timeIntervalSinceNow: 1)) { break }
                    }
                    let write = self.requested
                    self.requested = false
                    let stop = self.stopped
                    self.condition.unlock()
                    guard !stop, let journal else { return }
                    if write { journal.writeQueuedInSteps() }
                }
            }
            thread.name = "ingest-journal-writer"
            thread.start()
        }

        func request() {
            condition.lock()
            requested = true
            condition.signal()
            condition.unlock()
        }

        func stop() {
            condition.lock()
            stopped = true
            condition.signal()
            condition.unlock()
        }
    }

    private func beginLocked() throws(SQLiteError) {
        guard !inTransaction else { return }
        try database.execute("BEGIN IMMEDIATE")
        inTransaction = true
    }

    /// Applies the queued writes, the oldest first: all of them, or at most `limit`.
    private func applyQueued(limit: Int = .max) throws {
        queueLock.lock()
        let operations: [() throws -> Void]
        if pending.count <= limit {
            operations = pending
            pending.removeAll(keepingCapacity: true)
        } else {
            operations = Array(pending.prefix(limit))
            pending.removeFirst(limit)
        }
        queueLock.unlock()
        for operation in operations { try operation() }
    }

    /// Writes of the background writer per transaction: large batches cost far less per row (one commit, each
    /// page written once) while a worker that needs a barrier waits for at most one of them.
    static let stepSize = 2_000

    /// The background writer's work: the queue in transactions of `stepSize` writes, taking the lock for each.
    private func writeQueuedInSteps() {
        while true {
            lock.lock()
            queueLock.lock()
            let queued = pending.count
            queueLock.unlock()
            if queued == 0 && !inTransaction {
                lock.unlock()
                return
            }
            do {
                try beginLocked()
                try applyQueued(limit: SQLiteJournal.stepSize)
                try commitLocked()
            } catch {
                rollbackLocked()
                remember(error)
            }
            lock.unlock()
        }
    }

    private func rollbackLocked() {
        if !database.isAutocommit { try? database.execute("ROLLBACK") }
        inTransaction = false
    }

    /// A queued batch that could not be written: its files are redone by the next run; `commit` reports it.
    private func remember(_ error: Error) {
        let message = (error as? SQLiteError)?.message ?? "\(error)"
        queueLock.lock()
        if deferredError == nil {
            deferredError = JournalError(
                "journal \(path): finished files could not be recorded (the next run redoes them): \(message)",
                isDiskFull: (error as? SQLiteError)?.isDiskFull ?? false)
        }
        queueLock.unlock()
    }

    private func read<T>(_ body: (Reader) throws -> T) throws -> T {
        queueLock.lock()
        let pooled = readers.popLast()
        queueLock.unlock()
        do {
            let reader = try pooled ?? Reader(path: path, snapshot: writerLock != nil)
            defer {
                queueLock.lock()
                readers.append(reader)
                queueLock.unlock()
            }
            try reader.renew()
            return try body(reader)
        } catch let error as SQLiteError {
            throw JournalError("journal \(path): \(error.message)", isDiskFull: error.isDiskFull)
        }
    }

    private func commitLocked() throws(SQLiteError) {
        guard inTransaction else { return }
        inTransaction = false
        try database.execute("COMMIT")
    }

    /// Writes the queued records in one transaction; a failure is remembered and rethrown by `commit()`.
    /// The caller holds `lock`.
    private func writeQueuedLocked() {
        queueLock.lock()
        let nothingQueued = pending.isEmpty
        queueLock.unlock()
        if nothingQueued && !inTransaction { return }
        do {
            try beginLocked()
            try applyQueued()
            try commitLocked()
        } catch {
            rollbackLocked()
            remember(error)
        }
    }

    /// Writes everything queued and commits; throws if a batch written earlier failed.
    public func commit() throws {
        lock.lock()
        defer { lock.unlock() }
        writeQueuedLocked()
        queueLock.lock()
        let failure = deferredError
        deferredError = nil
        queueLock.unlock()
        if let failure { throw failure }
    }

    /// Commits what is queued, then folds the write-ahead log into the database file and empties it
    /// (`wal_checkpoint(TRUNCATE)`), so the one file is the whole journal: a copy or cache of it alone resumes.
    /// A reader (`ingest status` beside a run) does neither: taking the write lock could hold up the run's next
    /// batch.
    public func close() throws {
        backgroundWriter?.stop()
        guard writerLock != nil else {
            queueLock.lock()
            readers.removeAll()
            queueLock.unlock()
            return
        }
        try commit()
        queueLock.lock()
        readers.removeAll()
        queueLock.unlock()
        lock.lock()
        // Only a reader of another process (a `status`) can hold it up; the log then stays, and is read through.
        try? database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        // Another run may start now, even while this object lingers.
        writerLock = nil
        lock.unlock()
    }

    private func statement(_ sql: String) throws(SQLiteError) -> Statement {
        if let cached = statements[sql] { return cached }
        let prepared = try database.prepare(sql)
        statements[sql] = prepared
        return prepared
    }

    /// A read-only connection with its own statements; one per worker at a time.
    private final class Reader {
        let database: Database
        private var statements: [String: Statement] = [:]

        init(path: String, snapshot: Bool) throws(SQLiteError) {
            database = try Database(path: path, create: false)
            database.setBusyTimeout(milliseconds: 5_000)
            // Closing must not checkpoint: a reader beside a run would take the run's write lock to do it.
            try database.keepWriteAheadLogOnClose()
            try database.execute("PRAGMA query_only=1")
            // During a run, what a reader needs (earlier runs' rows) does not change: one read transaction for the
            // run spares a lock and unlock (fcntl) per lookup.
            self.snapshot = snapshot
            if snapshot { try database.execute("BEGIN") }
        }

        private let snapshot: Bool
        private var uses = 0

        /// Renews the snapshot now and then, so the write-ahead log can be folded back during a long run.
        func renew() throws(SQLiteError) {
            uses += 1
            guard snapshot, uses % 5_000 == 0 else { return }
            try database.execute("COMMIT; BEGIN")
        }

        func statement(_ sql: String) throws(SQLiteError) -> Statement {
            if let cached = statements[sql] { return cached }
            let prepared = try database.prepare(sql)
            statements[sql] = prepared
            return prepared
        }
    }

    static var now: Int64 { Int64(Date().timeIntervalSince1970) }

    // MARK: - Reading

    static let recordColumns = """
        id, root, relative_path, path, size, mtime_ns, inode, sha256, pipeline, config_hash, state, attempts, \
        failures, reason, facts, template_values, dedupe_key, duplicate_of, side_effects, run_id
        """

    /// The record of one file, or nil when the journal has never seen it.
    public func record(root: String, relativePath: String) throws -> JournalRecord? {
        try read { reader in
            let rows = try reader.statement(
                "SELECT \(SQLiteJournal.recordColumns) FROM files WHERE root = ?1 AND relative_path = ?2"
            )
            .rows([.text(root), .text(relativePath)])
            return rows.first.map(SQLiteJournal.record(from:))
        }
    }

    /// True when the journal holds any file under `root` (a new batch needs no lookup per file).
    public func knows(root: String) throws -> Bool {
        try read { reader in
            try !reader.statement("SELECT 1 FROM files WHERE root = ?1 LIMIT 1").rows([.text(root)]).isEmpty
        }
    }

    /// Every record in path order, one at a time (a journal of any size).
    public func forEachRecord(_ body: (JournalRecord) throws -> Void) throws {
        // A separate statement so the walk does not hold the lock the run's statements need.
        let rows: Statement
        do {
            rows = try database.prepare("SELECT \(SQLiteJournal.recordColumns) FROM files ORDER BY root, relative_path")
        } catch {
            throw JournalError("journal \(path): \(error.message)")
        }
        do {
            try rows.forEachRow { try body(SQLiteJournal.record(from: $0)) }
        } catch let error as SQLiteError {
            throw JournalError("journal \(path): \(error.message)")
        }
    }

    /// Files per state.
    public func counts() throws -> [JournalState: Int] {
        try read { reader in
            var counts: [JournalState: Int] = [:]
            for row in try reader.statement("SELECT state, COUNT(*) FROM files GROUP BY state").rows() {
                if let state = row[0].string.flatMap(JournalState.init(rawValue:)) {
                    counts[state] = Int(row[1].int ?? 0)
                }
            }
            return counts
        }
    }

    /// The stages journaled for one file, in pipeline order.
    public func stages(fileID: Int64) throws -> [JournalStage] {
        try read { reader in
            try reader.statement(
                "SELECT position, name, status, attempts, outputs, error FROM stages WHERE file_id = ?1 ORDER BY position"
            ).rows([.integer(fileID)]).map { row in
                JournalStage(
                    position: Int(row[0].int ?? 0), name: row[1].string ?? "",
                    status: row[2].string.flatMap(JournalStage.Status.init(rawValue:)) ?? .started,
                    attempts: Int(row[3].int ?? 0), outputs: SQLiteJournal.object(row[4]), error: row[5].string)
            }
        }
    }

    /// A value the journal keeps beside the files (`pipeline`: the name of the last pipeline run).
    public func meta(_ key: String) throws -> String? {
        try read { reader in
            try reader.statement("SELECT value FROM meta WHERE key = ?1").rows([.text(key)]).first?.first?.string
        }
    }

    public func setMeta(_ key: String, _ value: String) throws {
        try write(barrier: false) {
            try statement("INSERT INTO meta(key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = ?2")
                .run([.text(key), .text(value)])
        }
    }

    static func record(from row: [SQLiteValue]) -> JournalRecord {
        JournalRecord(
            id: row[0].int ?? 0, root: row[1].string ?? "", relativePath: row[2].string ?? "",
            path: row[3].string ?? "",
            size: row[4].int, modified: row[5].int, inode: row[6].int.map { UInt64(bitPattern: $0) },
            sha256: row[7].string, pipeline: row[8].string ?? "", configHash: row[9].string ?? "",
            state: row[10].string.flatMap(JournalState.init(rawValue:)) ?? .running, attempts: Int(row[11].int ?? 0),
            failures: failures(row[12]), reason: row[13].string, facts: object(row[14]),
            templateValues: object(row[15]), dedupeKey: row[16].string, duplicateOf: row[17].string,
            sideEffects: (row[18].int ?? 0) != 0, runID: row.count > 19 ? row[19].string : nil)
    }

    static func object(_ value: SQLiteValue) -> JSONObject {
        guard let text = value.string, case .object(let object)? = try? JSONValue.parse(text) else { return [:] }
        return object
    }

    static func failures(_ value: SQLiteValue) -> [RuleFailure] {
        guard let text = value.string, case .array(let items)? = try? JSONValue.parse(text) else { return [] }
        return items.map { item in
            RuleFailure(
                stage: item["stage"]?.stringValue ?? "", rule: item["rule"]?.stringValue ?? "",
                message: item["message"]?.stringValue ?? "", expected: item["expected"]?.stringValue,
                actual: item["actual"]?.stringValue)
        }
    }

    // MARK: - Writing

    /// Keys claimed by files of this run (their rows may not be written, or committed, yet).
    private var claims: [String: String] = [:]

    /// Claims `key` for the file at `path`: nil when it is now this file's, else the path of the file that holds
    /// it — one of this run, or a journaled file that is done, or failed after a request went out. Check and claim
    /// are one step under a lock, so two workers cannot both take a key. (One run writes a SQLite journal at a
    /// time, so the claims of this run are all there are.)
    public func claim(
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
    public func release(key: String) {
        claimLock.lock()
        claims[key] = nil
        claimLock.unlock()
    }

    private let claimLock = NSLock()

    /// Writes the file's row as `running` (one more attempt) and returns its id; committed with the barrier of
    /// the first stage that uses the network. Files that never reach such a stage skip this: their one row is
    /// written by `finish`, since losing it in a crash only means redoing local work.
    public func begin(_ start: JournalStart) throws -> Int64 {
        try write(barrier: false) {
            let id = try upsert(start, state: .running, countAttempt: true)
            if !start.keepStages, start.existingID != nil {
                try statement("DELETE FROM stages WHERE file_id = ?1").run([.integer(id)])
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
            .text(start.pipeline), .text(start.configHash), .text(SQLiteJournal.json(start.templateValues)),
            (state == .failed ? nil : start.dedupeKey).map { .text($0) } ?? .null, .text(runID),
            .integer(SQLiteJournal.now), .integer(start.keepStages ? 1 : 0), .text(state.rawValue),
            .integer(countAttempt ? 1 : 0), failures.map { .text($0) } ?? .null, reason.map { .text($0) } ?? .null,
            facts.map { .text($0) } ?? .null,
        ]
        // Prepared once and kept: the statement cache is keyed by the SQL, which is long to hash once per file.
        guard needsID else {
            // Without RETURNING: SQLite then needs no temporary table for the answer (most rows of a batch).
            if upsertWithoutIDStatement == nil {
                upsertWithoutIDStatement = try statement(
                    SQLiteJournal.upsertSQL.replacingOccurrences(of: "RETURNING id", with: ""))
            }
            try upsertWithoutIDStatement!.run(values)
            return start.existingID ?? 0
        }
        if upsertStatement == nil { upsertStatement = try statement(SQLiteJournal.upsertSQL) }
        return try upsertStatement!.rows(values).first?.first?.int ?? 0
    }

    /// The row of a file the journal did not have, written by a plain INSERT: the cheapest statement for the
    /// commonest write (every file of a new batch that has no network stage). Empty facts and template values are
    /// left NULL, which reads back as empty. False when a row turned out to exist; the caller then upserts.
    private func insertNew(
        _ start: JournalStart, state: JournalState, failures: String?, reason: String?, facts: String?
    ) throws(SQLiteError) -> Bool {
        if insertStatement == nil {
            insertStatement = try statement(
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
                start.templateValues.isEmpty ? .null : .text(SQLiteJournal.json(start.templateValues)),
                (state == .failed ? nil : start.dedupeKey).map { .text($0) } ?? .null, .text(runID),
                .integer(SQLiteJournal.now), failures.map { .text($0) } ?? .null, reason.map { .text($0) } ?? .null,
                facts.map { .text($0) } ?? .null,
            ])
            return true
        } catch  where error.isConstraint {
            return false
        }
    }

    private var insertStatement: Statement?
    private var upsertStatement: Statement?
    private var upsertWithoutIDStatement: Statement?

    private static let upsertSQL = """
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
    public func finish(
        _ start: JournalStart, id: Int64?, state: JournalState, failures: [RuleFailure], reason: String?,
        facts: JSONObject
    ) throws {
        if state == .failed, let key = start.dedupeKey, id == nil { release(key: key) }
        let failureText = failures.isEmpty ? nil : JSONValue.array(failures.map(\.json)).serialized()
        let factsText = SQLiteJournal.json(facts)
        enqueue { [self] in
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
                    try statement("DELETE FROM stages WHERE file_id = ?1").run([.integer(existing)])
                }
                return
            }
            try statement(
                """
                UPDATE files SET state = ?2, failures = ?3, reason = ?4, facts = ?5, sha256 = COALESCE(?6, sha256),
                    dedupe_key = CASE WHEN ?2 = 'failed' AND side_effects = 0 THEN NULL ELSE dedupe_key END,
                    template_values = ?8, updated_at = ?7
                WHERE id = ?1
                """
            ).run([
                .integer(fileID), .text(state.rawValue), failureText.map { .text($0) } ?? .null,
                reason.map { .text($0) } ?? .null, .text(factsText), start.sha256.map { .text($0) } ?? .null,
                .integer(SQLiteJournal.now), .text(SQLiteJournal.json(start.templateValues)),
            ])
        }
    }

    /// Records that a stage starts. For a stage that uses the network this is a barrier: committed before the
    /// stage may run, so a crash from here on is known to have happened mid-stage.
    public func stageStarted(fileID: Int64, position: Int, name: String, barrier: Bool) throws {
        try write(barrier: barrier) {
            try statement(
                """
                INSERT INTO stages(file_id, position, name, status, attempts, updated_at)
                VALUES (?1, ?2, ?3, 'started', 1, ?4)
                ON CONFLICT(file_id, position) DO UPDATE SET name = ?3, status = 'started', attempts = attempts + 1,
                    outputs = NULL, error = NULL, updated_at = ?4
                """
            ).run([.integer(fileID), .integer(Int64(position)), .text(name), .integer(SQLiteJournal.now)])
            if barrier {
                try statement("UPDATE files SET side_effects = 1 WHERE id = ?1").run([.integer(fileID)])
            }
        }
    }

    /// Records how a stage ended and what it produced; a barrier for a stage that uses the network.
    public func stageFinished(
        fileID: Int64, position: Int, name: String, status: JournalStage.Status, outputs: JSONObject,
        error: String?, barrier: Bool
    ) throws {
        try write(barrier: barrier) {
            try statement(
                """
                INSERT INTO stages(file_id, position, name, status, attempts, outputs, error, updated_at)
                VALUES (?1, ?2, ?3, ?4, 1, ?5, ?6, ?7)
                ON CONFLICT(file_id, position) DO UPDATE SET name = ?3, status = ?4, outputs = ?5, error = ?6,
                    updated_at = ?7
                """
            ).run([
                .integer(fileID), .integer(Int64(position)), .text(name), .text(status.rawValue),
                .text(SQLiteJournal.json(outputs)), error.map { .text($0) } ?? .null, .integer(SQLiteJournal.now),
            ])
        }
    }

    /// Records a file skipped as a duplicate of `earlier`, or one that failed before work on it could start (a
    /// walker problem, an unreadable file): no stage ran.
    public func recordWithoutWork(
        root: String, relativePath: String, path: String, pipeline: String, configHash: String, state: JournalState,
        failures: [RuleFailure] = [], reason: String? = nil, duplicateOf: String? = nil,
        templateValues: JSONObject = [:]
    ) throws {
        enqueue { [self] in
            let failureText = failures.isEmpty ? nil : JSONValue.array(failures.map(\.json)).serialized()
            try statement(
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
                duplicateOf.map { .text($0) } ?? .null, .text(SQLiteJournal.json(templateValues)), .text(runID),
                .integer(SQLiteJournal.now),
            ])
        }
    }

    /// A done file whose size, mtime or inode changed but whose content did not (a copy, a `touch`): the new
    /// identity is kept so the next run takes the fast check again.
    public func refreshIdentity(fileID: Int64, size: Int64, modified: Int64, inode: UInt64) throws {
        enqueue { [self] in
            try statement("UPDATE files SET size = ?2, mtime_ns = ?3, inode = ?4 WHERE id = ?1").run([
                .integer(fileID), .integer(size), .integer(modified), .integer(Int64(bitPattern: inode)),
            ])
        }
    }

    static func json(_ object: JSONObject) -> String { JSONValue.object(object).serialized() }
}
