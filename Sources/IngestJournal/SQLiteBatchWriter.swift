import Foundation
import IngestCore
import NativeSQLite
import NativeSystem

/// The SQLite journal's writer connection and its batches. Writes that only save local work are queued in memory
/// and written in transactions (up to `batchLimit` writes or `batchInterval` seconds) by a thread of its own, so
/// the journal is not the bottleneck; a *barrier* write applies everything queued before it (records keep their
/// order) and commits before it returns.
// unchecked: owns the writer connection (sqlite3*) and its statements, used under `lock`; the queue under queueLock
final class SQLiteBatchWriter: @unchecked Sendable {
    /// What messages call the journal.
    let path: String
    /// The writer connection. Used under `lock`, except by a walk that prepares a statement of its own.
    let database: Database
    /// Guards `database`, `statements` and `inTransaction`.
    private let lock = NSLock()
    private var statements: [String: Statement] = [:]
    private var inTransaction = false
    /// Guards `pending`, `batchStarted` and `deferredError`.
    private let queueLock = NSLock()
    private var pending: [() throws -> Void] = []
    private var batchStarted: Double
    private var deferredError: JournalError?
    /// Set on first use; guarded by `queueLock` when set.
    private var backgroundWriter: BackgroundWriter?

    /// Writes per transaction, and seconds a transaction stays open, before a commit. A row costs several times
    /// less in a batch of thousands than in one of hundreds; the last batch, which the run writes itself as it
    /// ends, stays short (about 10 ms).
    var batchLimit = 2_000
    var batchInterval = 0.5
    /// Queued writes beyond which a worker writes them itself (the background writer fell behind).
    static let maxQueued = 20_000
    /// Writes of the background writer per transaction: large batches cost far less per row (one commit, each
    /// page written once) while a worker that needs a barrier waits for at most one of them.
    static let stepSize = 2_000

    /// The run's clock, which `batchInterval` is measured on.
    private let clock: any WaitClock

    init(path: String, database: Database, clock: any WaitClock) {
        self.path = path
        self.database = database
        self.clock = clock
        batchStarted = clock.now
    }

    deinit {
        backgroundWriter?.stop()
        if inTransaction { try? database.execute("COMMIT") }
    }

    // MARK: - Writes

    /// Runs `body` on the writer connection inside a transaction that also applies every queued write first (so
    /// records keep their order); commits when `barrier` is set. A failure rolls back and is rethrown.
    func write<T>(barrier: Bool, _ body: () throws -> T) throws -> T {
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
    func enqueue(_ operation: @escaping () throws -> Void) {
        queueLock.lock()
        let now = clock.now
        if pending.isEmpty { batchStarted = now }
        pending.append(operation)
        let due = pending.count >= batchLimit || now - batchStarted >= batchInterval
        let backlog = pending.count >= SQLiteBatchWriter.maxQueued
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
            if backgroundWriter == nil { backgroundWriter = BackgroundWriter(writer: self) }
            queueLock.unlock()
        }
        backgroundWriter?.request()
    }

    /// A prepared statement of the writer connection, kept for reuse. The caller holds the lock: it runs inside
    /// `write` or a queued write.
    func statement(_ sql: String) throws(SQLiteError) -> Statement {
        if let cached = statements[sql] { return cached }
        let prepared = try database.prepare(sql)
        statements[sql] = prepared
        return prepared
    }

    /// Writes everything queued and commits; throws if a batch written earlier failed.
    func commit() throws {
        lock.lock()
        defer { lock.unlock() }
        writeQueuedLocked()
        queueLock.lock()
        let failure = deferredError
        deferredError = nil
        queueLock.unlock()
        if let failure { throw failure }
    }

    /// Runs `body` on the writer connection under the lock, outside any batch (a checkpoint at close).
    func withConnection(_ body: (Database) -> Void) {
        lock.lock()
        body(database)
        lock.unlock()
    }

    /// Stops the background writer (at close); what is still queued is written by `commit`.
    func stopBackgroundWriter() {
        backgroundWriter?.stop()
    }

    // MARK: - Transactions (the caller holds `lock`)

    private func beginLocked() throws(SQLiteError) {
        guard !inTransaction else { return }
        try database.execute("BEGIN IMMEDIATE")
        inTransaction = true
    }

    private func commitLocked() throws(SQLiteError) {
        guard inTransaction else { return }
        inTransaction = false
        try database.execute("COMMIT")
    }

    private func rollbackLocked() {
        if !database.isAutocommit { try? database.execute("ROLLBACK") }
        inTransaction = false
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

    /// Writes the queued records in one transaction; a failure is remembered and rethrown by `commit()`.
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

    /// The background writer's work: the queue in transactions of `stepSize` writes, taking the lock for each.
    fileprivate func writeQueuedInSteps() {
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
                try applyQueued(limit: SQLiteBatchWriter.stepSize)
                try commitLocked()
            } catch {
                rollbackLocked()
                remember(error)
            }
            lock.unlock()
        }
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
}

/// The thread that writes queued batches. It holds the writer weakly, and ends with it (or at `close`). It blocks
/// between requests (a thread of its own: SQLite calls block).
private final class BackgroundWriter: Sendable {
    private struct Requests {
        var requested = false
        var stopped = false
    }
    private let requests = ConditionLock(Requests())

    init(writer: SQLiteBatchWriter) {
        let thread = Thread { [weak writer, requests] in
            while true {
                // Wakes now and then to notice a journal that went away without `close` (a liveness bound:
                // `RealTime`).
                let (write, stop) = requests.wait(until: { $0.requested || $0.stopped }, timeout: 1) { requests, _ in
                    defer { requests.requested = false }
                    return (requests.requested, requests.stopped)
                }
                guard !stop, let writer else { return }
                if write { writer.writeQueuedInSteps() }
            }
        }
        thread.name = "ingest-journal-writer"
        thread.start()
    }

    func request() { requests.change { $0.requested = true } }

    func stop() { requests.change { $0.stopped = true } }
}
