import Foundation
import IngestCore
import NativeSQLite
import NativeSystem

/// The batch journal: one SQLite file (`.ingest/journal.sqlite` by default, WAL mode) with a row per input file
/// and a row per stage of it. A run reads it to skip files already done, and writes it as files go.
///
/// Writes are grouped into transactions (up to `batchLimit` writes or `batchInterval` seconds) so the journal is
/// not the bottleneck, except at *barriers*: "stage started" before a stage that uses the network, and "stage done
/// + its results" right after, are committed before the run goes on. A `kill -9` can therefore lose only records
/// of local work, which a re-run simply redoes; it never loses the record of something the outside world saw.
///
/// One writer at a time: a run holds an exclusive lock on `<journal>.lock` and one on the journal file itself, so
/// no other name of it runs beside (both released by the kernel if the process dies). Thread-safe. Workers never
/// wait on each other for the journal: lookups go through a pool of read connections (WAL readers do not block the
/// writer), and the records of finished files are queued in memory and written as one transaction by whichever
/// worker finds the batch due (`SQLiteBatchWriter`).
// unchecked: owns SQLite connections (sqlite3*), each used under its own lock (readerLock, claimLock, the writer's)
package final class SQLiteJournal: @unchecked Sendable {
    package let path: String
    /// The writer connection and its batches.
    let batches: SQLiteBatchWriter
    /// The run's clock: rows' `updated_at`, the batches' interval, the wait for an exiting lock holder.
    let clock: any WaitClock
    /// `updated_at` of a row written now.
    var rowTime: Int64 { JournalRow.time(clock.date) }
    var writerLock: FileLock?
    /// The lock on the journal file itself (by device and inode, so through any of its names); nil for a reader.
    var fileWriterLock: FileIdentityLock?
    /// The journal file's descriptor, kept open by each connection (`SharedFileDescriptor`).
    private let file: SharedFileDescriptor
    /// Guards `readers`.
    private let readerLock = NSLock()
    private var readers: [SQLiteJournalReader] = []
    /// Identifies this run: a `running` row of another run that made no side effect holds no dedupe key.
    package let runID: String

    /// Keys claimed by files of this run (their rows may not be written, or committed, yet); guarded by
    /// `claimLock`.
    var claims: [String: String] = [:]
    let claimLock = NSLock()
    /// The commonest writes, prepared once and kept (the statement cache is keyed by the SQL, which is long to
    /// hash once per file). Used under the writer's lock.
    var insertStatement: Statement?
    var upsertStatement: Statement?
    var upsertWithoutIDStatement: Statement?

    /// Writes per transaction, and seconds a transaction stays open, before a commit.
    package var batchLimit: Int {
        get { batches.batchLimit }
        set { batches.batchLimit = newValue }
    }
    package var batchInterval: Double {
        get { batches.batchInterval }
        set { batches.batchInterval = newValue }
    }

    /// Bytes the write-ahead log file is cut back to after a checkpoint.
    static let walSizeLimit = 8 << 20

    /// Opens (creating it and its folder when `create` is true) the journal at `path`. A writer takes the lock.
    /// `clock`: the run's; rows are dated by it, and the wait for a lock whose holder is exiting is measured and
    /// waited on it.
    package init(path: String, writer: Bool = true, create: Bool = true, clock: any WaitClock = SystemClock()) throws {
        self.path = path
        self.clock = clock
        runID = UUID().uuidString.lowercased()
        let folder = (path as NSString).deletingLastPathComponent
        if !create && !FileManager.default.fileExists(atPath: path) {
            throw JournalError("no journal at \(path) (run `ingest run` first, or pass --journal PATH)")
        }
        if create && !folder.isEmpty {
            do {
                try FileSystem.makeFolders(folder)
            } catch {
                throw JournalError("cannot create the journal folder \(folder): \(error.reason)")
            }
        }
        // `<journal>.lock` first: it keeps two runs from creating the journal at once, and names the run for
        // `status`. Then the journal file itself, so no other name of it (a symlink, a hard link) runs beside.
        writerLock = try writer ? SQLiteJournal.lockWriter(path, clock: clock) : nil
        if !FileManager.default.fileExists(atPath: path) { try JournalFile.create(path) }
        let fileLock = try writer ? SQLiteJournal.lockFile(path, clock: clock) : nil
        fileWriterLock = fileLock
        file = try fileLock?.file ?? SQLiteJournal.descriptor(of: path)
        let database = try SQLiteJournal.openDatabase(path, writer: writer)
        database.keepAlive = file
        batches = SQLiteBatchWriter(path: path, database: database, clock: clock)
        if writer { try addMultipartTables() }
        if writer { writerLock?.recordOwner(runID: runID) }
    }

    /// Takes the lock only one writer of the journal at `path` may hold.
    private static func lockWriter(_ path: String, clock: any WaitClock) throws -> FileLock {
        try lock(path, at: path + ".lock", clock: clock) { () throws(SystemError) in
            try FileLock(path: path + ".lock")
        }
    }

    /// Takes the lock on the journal file itself, whatever its name (device and inode).
    private static func lockFile(_ path: String, clock: any WaitClock) throws -> FileIdentityLock {
        try lock(path, at: path, clock: clock) { () throws(SystemError) in try FileIdentityLock(path: path) }
    }

    /// One of the journal's locks, on the file at `lockPath`, waited for while its holder exits (`exitGrace`).
    private static func lock<Lock>(
        _ path: String, at lockPath: String, clock: any WaitClock, _ take: () throws(SystemError) -> Lock
    ) throws -> Lock {
        do {
            return try ExitingLockHolder.take(
                path: lockPath, grace: Double(exitGrace), now: { clock.now },
                pause: { _ = clock.sleep($0, cancellation: nil) }, waiting: { sayWaiting(path, holder: $0) },
                lock: take)
        } catch {
            throw lockError(path, error)
        }
    }

    /// Seconds a run waits for the journal's lock while its holder is exiting (killed, and a supervisor restarted
    /// the service before it was gone) or gone with a copy of its descriptor lingering; a live run's lock is
    /// refused at once.
    package static let exitGrace = 5

    private static func sayWaiting(_ path: String, holder: Int32) {
        let who =
            holder <= 0
            ? "a run that has exited"
            : "pid \(holder), which " + (Processes.isAlive(holder) ? "is exiting" : "has exited")
        FileHandle.standardError.write(
            Data(
                "ingest: the journal \(path) is still locked by \(who); waiting up to \(exitGrace) s for it to let go\n"
                    .utf8))
    }

    private static func lockError(_ path: String, _ error: SystemError) -> JournalError {
        if error.errno == FileLock.heldElsewhere {
            return JournalError("another ingest run is using the journal \(path); wait for it to finish")
        }
        return JournalError("cannot lock the journal \(path): \(error.reason)")
    }

    /// The journal file's descriptor in this process, kept open by every connection to it.
    private static func descriptor(of path: String) throws -> SharedFileDescriptor {
        do {
            return try SharedFileDescriptor.of(path: path)
        } catch {
            throw JournalError("cannot open the journal \(path): \(error.reason)")
        }
    }

    /// The writer connection to the journal at `path`, created whole or checked before use: a journal without its
    /// tables is never taken for a new one.
    private static func openDatabase(_ path: String, writer: Bool) throws -> Database {
        do {
            if writer { try JournalFile.checkBeforeWriting(path) }
            let database = try Database(path: path, create: false)
            database.setBusyTimeout(milliseconds: 5_000)
            // A reader (`ingest status` beside a run) must not fold the log at close: that takes the write lock.
            if !writer { try database.keepWriteAheadLogOnClose() }
            // Checked before the pragmas write to it: a file that is not ours is left as it was.
            try JournalFile.checkSchema(database, path: path)
            try database.execute(
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; "
                    + "PRAGMA journal_size_limit=\(SQLiteJournal.walSizeLimit);")
            return database
        } catch let error as SQLiteError {
            throw JournalError("cannot open the journal \(path): \(error.message)")
        }
    }

    /// Writes everything queued and commits; throws if a batch written earlier failed.
    package func commit() throws {
        try batches.commit()
    }

    /// Commits what is queued, then folds the write-ahead log into the database file and empties it
    /// (`wal_checkpoint(TRUNCATE)`), so the one file is the whole journal: a copy or cache of it alone resumes.
    /// A reader (`ingest status` beside a run) does neither: taking the write lock could hold up the run's next
    /// batch.
    package func close() throws {
        batches.stopBackgroundWriter()
        guard writerLock != nil else {
            dropReaders()
            return
        }
        try commit()
        dropReaders()
        batches.withConnection { database in
            // Only a reader of another process (a `status`) can hold it up; the log then stays, and is read through.
            try? database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            // Another run may start now, even while this object lingers.
            writerLock = nil
            fileWriterLock = nil
        }
    }

    // MARK: - Read connections

    /// Runs `body` on a pooled read connection (one per worker at a time).
    func read<T>(_ body: (SQLiteJournalReader) throws -> T) throws -> T {
        readerLock.lock()
        let pooled = readers.popLast()
        readerLock.unlock()
        do {
            let reader = try pooled ?? SQLiteJournalReader(path: path, keeping: file)
            defer {
                readerLock.lock()
                readers.append(reader)
                readerLock.unlock()
            }
            return try body(reader)
        } catch let error as SQLiteError {
            throw JournalError("journal \(path): \(error.message)", isDiskFull: error.isDiskFull)
        }
    }

    private func dropReaders() {
        readerLock.lock()
        readers.removeAll()
        readerLock.unlock()
    }
}

/// A read-only connection to the SQLite journal with its own statements; one per worker at a time.
///
/// Every lookup is a read transaction of its own (autocommit: the statement's reset ends it). A read transaction
/// kept open across lookups pins the write-ahead log: no checkpoint can fold back a frame written after it began,
/// so the log grew by every batch of the run (227 MB for 10,000 files), each commit tried a checkpoint in vain and
/// each lookup searched a longer log — a run's cost grew with the square of its files. A transaction per lookup
/// costs a lock and unlock of the `-shm` file, about a microsecond.
final class SQLiteJournalReader {
    let database: Database
    private var statements: [String: Statement] = [:]

    init(path: String, keeping file: SharedFileDescriptor) throws(SQLiteError) {
        database = try Database(path: path, create: false)
        database.keepAlive = file
        database.setBusyTimeout(milliseconds: 5_000)
        // Closing must not checkpoint: a reader beside a run would take the run's write lock to do it.
        try database.keepWriteAheadLogOnClose()
        try database.execute("PRAGMA query_only=1")
    }

    func statement(_ sql: String) throws(SQLiteError) -> Statement {
        if let cached = statements[sql] { return cached }
        let prepared = try database.prepare(sql)
        statements[sql] = prepared
        return prepared
    }
}

extension SQLiteJournal: JournalStore {
    package var localFiles: [String] { [path, path + "-wal", path + "-shm", path + ".lock"] }
    package func lease(root: String, relativePath: String) throws -> JournalLease { .granted }
    package func endLease(root: String, relativePath: String) {}
    package var leasePollInterval: Double { 1 }
}
